import { addColumn, boolean, migration } from "../Ddl.js"

/** A secret may refuse user-id signatures without an expiration; existing secrets do not. */
export default migration([
  addColumn("secrets", "require_expiration", boolean().notNull().default(false))
])
