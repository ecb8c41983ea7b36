import { addColumn, json, migration, only, raw, text } from "../Ddl.js"

/**
 * Page hosts are proven by a TXT record holding a random value per domain, and a failed domain
 * says why. The page hosts already held get their value here (from each database's own
 * generator of random bytes), so their holders can publish it; `cmp` domains have none.
 */
const pageHosts = "usage IN ('privacy-center', 'preference-center')"

export default migration([
  addColumn("domains", "verification", json()),
  addColumn("domains", "failure_reason", text()),
  only("sqlite", [
    raw(
      `UPDATE domains SET verification = json_object('record', '_cmp-verify.' || id, 'value', lower(hex(randomblob(24)))) WHERE ${pageHosts}`
    )
  ]),
  only("pg", [
    raw(
      `UPDATE domains SET verification = jsonb_build_object('record', '_cmp-verify.' || id, 'value', ` +
        `replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')) WHERE ${pageHosts}`
    )
  ])
])
