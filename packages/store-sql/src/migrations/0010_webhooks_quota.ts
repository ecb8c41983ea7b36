import { addColumn, integer, migration } from "../Ddl.js"

/**
 * The count quota `webhooks` (every webhook of an organization, enabled or not). Existing
 * organizations get the built-in default, 20; the operator raises it where more are in use.
 */
export default migration([
  addColumn("quotas", "webhooks", integer().notNull().default(20))
])
