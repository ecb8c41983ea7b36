import { addColumn, boolean, migration } from "../Ddl.js"

/**
 * Global Privacy Control on consent events: the signal, whether the choices went against it,
 * and whether the person chose after being shown it. Rows already logged keep their digests:
 * the consent log leaves these columns out of a row holding the values given here.
 */
export default migration([
  addColumn("consent_events", "gpc", boolean().notNull().default(false)),
  addColumn("consent_events", "gpc_conflict", boolean()),
  addColumn("consent_events", "gpc_override", boolean())
])
