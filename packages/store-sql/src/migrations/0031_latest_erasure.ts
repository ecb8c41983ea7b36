import { createIndex, migration } from "../Ddl.js"

/**
 * An organization's latest user erasure, one index probe: a consent token issued after it
 * cannot be refused for an erasure, so its user's own erasure need not be read.
 */
export default migration([
  createIndex("consent_user_erasures", "consent_user_erasures_latest", ["organization_id", "erased_at", "id"])
])
