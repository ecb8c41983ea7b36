import { addColumn, createIndex, json, migration, text } from "../Ddl.js"

/**
 * Consent recorded where it is given: a public write names its organization by the public key
 * (indexed); a secret keeps its value sealed, to key the HMAC of signed user ids (secrets made
 * earlier hold none and cannot sign); an event records who acted for its user (`delegate`).
 */
export default migration([
  createIndex("organizations", "organizations_public_api_key", ["public_api_key"]),
  addColumn("secrets", "secret_sealed", text()),
  addColumn("consent_events", "delegate", json())
])
