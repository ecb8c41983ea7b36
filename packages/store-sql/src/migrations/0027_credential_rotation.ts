import { addColumn, createIndex, migration, text, timestamp } from "../Ddl.js"

/**
 * Rotating a credential without downtime: an API key keeps the hash of the secret its last
 * rotation replaced (hashed like the current one, never in clear) and until when it still opens
 * sessions; an organization keeps the public key its last rotation replaced and until when it is
 * still accepted, found by its own index as the current key is. Existing rows have none.
 */
export default migration([
  addColumn("api_keys", "previous_secret_hash", text()),
  addColumn("api_keys", "previous_secret_expires_at", timestamp()),
  addColumn("organizations", "previous_public_api_key", text()),
  addColumn("organizations", "previous_key_expires_at", timestamp()),
  createIndex("organizations", "organizations_previous_public_api_key", ["previous_public_api_key"])
])
