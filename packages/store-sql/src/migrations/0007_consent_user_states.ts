import { migration, renameColumn } from "../Ddl.js"

/**
 * A consent user's output shows one regulation's state under `consents`; the column that keeps
 * every regulation's state (the same JSON as before, keyed by regulation) is renamed so the
 * stored map and the output field no longer share a name.
 */
export default migration([renameColumn("consent_users", "consents", "consent_states")])
