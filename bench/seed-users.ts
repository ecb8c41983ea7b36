/**
 * Seeds one organization for the `expired` figure (`expired.ts` runs this as a child process):
 * EXPIRED_USERS consent users on a SQLite file, each with a GDPR choice, under a consent policy
 * of 12 months. The organization, its key and its policy are made through the platform (which
 * migrates the file); the users are then inserted by SQL, a thousand rows a statement and fifty
 * thousand a transaction, and the store's triggers keep their state rows as for any write. The
 * users bypass the consent log and have no events: the figure reads users only.
 *
 * Seven users in ten gave consent (analytics), the rest refused everything; their last choices
 * are spread evenly over the two years before the seed, each user made up to 30 days before it,
 * so about half are expired under the policy when the seed is fresh.
 *
 *   EXPIRED_TARGET=<file> EXPIRED_USERS=1000000
 *
 * Prints one JSON line: the organization, its key and secret, the seed's time and its instant.
 */
import { createPlatform } from "@cmp/platform"
import { sqlite } from "@cmp/store-sqlite"
import Database from "better-sqlite3"

const target = process.env.EXPIRED_TARGET!
const users = Number(process.env.EXPIRED_USERS ?? 1_000_000)
const PER_STATEMENT = 1000
const PER_TRANSACTION = 50_000
const DAY = 86_400_000

/** A fixed sequence (a 32-bit xorshift), so two seeds of one version hold the same users. */
const random = (() => {
  let x = 2463534242
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 4294967296
  }
})()

const main = async () => {
  const started = performance.now()
  const now = Date.now()
  const cmp = await createPlatform({ store: sqlite({ filename: target }), logLevel: "Error", dispatcher: false })
  let organizationId: string
  let key: { id: string; secret: string }
  try {
    const operator = cmp.asOperator()
    const org = await cmp.organizations.create({ name: `expired-${users}` }, { as: operator })
    organizationId = org.id
    const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as: operator })
    await cmp.premiumFeatures.patch(flags.data[0]!.id, { consents_api: true }, { as: operator })
    const made = await cmp.keys.create({ organization_id: org.id, name: "expired" }, { as: operator })
    key = { id: made.id, secret: made.secret! }
    await cmp.consents.policies.create(
      { organization_id: org.id, regulation: "gdpr", consent_duration: 12, consent_duration_unit: "months" },
      { as: operator }
    )
  } finally {
    await cmp.dispose()
  }

  const db = new Database(target)
  db.pragma("synchronous = OFF")
  const columns = (db.prepare("SELECT name FROM pragma_table_info('consent_users')").all() as Array<{ name: string }>).map((c) => c.name)
  const statementOf = (rows: number) =>
    db.prepare(`INSERT INTO consent_users (${columns.join(", ")}) VALUES ${Array.from({ length: rows }, () => `(${columns.map(() => "?").join(", ")})`).join(", ")}`)
  const full = statementOf(PER_STATEMENT)
  const rowOf = (i: number): Array<unknown> => {
    const last = now - Math.floor(random() * 730 * DAY)
    const created = last - Math.floor(random() * 30 * DAY)
    const given = random() < 0.7
    const state = {
      gdpr: {
        purposes: [{ id: "analytics", enabled: given }, { id: "ads", enabled: false }],
        vendors: {},
        updated_at: new Date(last).toISOString(),
        event_id: `seed-e-${i}`
      }
    }
    const values: Record<string, unknown> = {
      id: `seed-u-${i}`,
      organization_id: organizationId,
      organization_user_id: `crm-${i}`,
      metadata: null,
      country: null,
      consent_states: JSON.stringify(state),
      created_at: new Date(created).toISOString(),
      updated_at: new Date(last).toISOString(),
      version: 1
    }
    return columns.map((c) => (Object.hasOwn(values, c) ? values[c] : null))
  }
  const insert = db.transaction((from: number, count: number) => {
    for (let at = from; at < from + count; at += PER_STATEMENT) {
      const n = Math.min(PER_STATEMENT, from + count - at)
      const rows = Array.from({ length: n }, (_, k) => rowOf(at + k)).flat()
      ;(n === PER_STATEMENT ? full : statementOf(n)).run(...rows)
    }
  })
  for (let from = 0; from < users; from += PER_TRANSACTION) {
    insert(from, Math.min(PER_TRANSACTION, users - from))
    process.stderr.write(`# expired seed: ${Math.min(from + PER_TRANSACTION, users)}/${users} users, ${((performance.now() - started) / 1000).toFixed(0)} s\n`)
  }
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
  const seeded = (performance.now() - started) / 1000
  process.stdout.write(`${JSON.stringify({ organization_id: organizationId, key_id: key.id, key_secret: key.secret, users, seeded, at: new Date(now).toISOString() })}\n`)
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
