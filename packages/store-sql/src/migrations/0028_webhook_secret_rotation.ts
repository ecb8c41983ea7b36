import { addColumn, migration, text, timestamp } from "../Ddl.js"

/**
 * A webhook's signing secret is rotated with an overlap: the secret it replaced is kept, sealed
 * like the current one, with the time it stops signing. Both stay null outside a rotation.
 */
export default migration([
  addColumn("webhooks", "previous_secret_sealed", text()),
  addColumn("webhooks", "previous_secret_expires_at", timestamp())
])
