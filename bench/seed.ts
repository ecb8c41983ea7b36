/**
 * Seeds one organization for the `growth` figure (`growth.ts` runs this as a child process):
 * GROWTH_EVENTS consent events, each of a new user, written through core's write path on the
 * store's own layer, so the database holds exactly what the API would have written: the users,
 * the events, their consent log entries and one outbox message each to the organization's
 * webhook. Not over HTTP, which would take hours for a million.
 *
 *   GROWTH_STORE=sqlite GROWTH_TARGET=<file>, or GROWTH_STORE=postgres GROWTH_TARGET=<url>
 *   GROWTH_EVENTS=100000
 *
 * Prints one JSON line: the organization, its key, a sample of user ids spread over the store,
 * the seconds it took, and the log's verification (which must be valid).
 */
import { ConsentEventsResource, type Principal, ResourceService } from "@cmp/core"
import { createPlatform } from "@cmp/platform"
import { postgres } from "@cmp/store-postgres"
import { sqlite } from "@cmp/store-sqlite"
import * as Effect from "effect/Effect"

const store = process.env.GROWTH_STORE === "postgres" ? "postgres" : "sqlite"
const target = process.env.GROWTH_TARGET!
const events = Number(process.env.GROWTH_EVENTS ?? 100_000)
/**
 * Writes in flight at once: one. Writes that overlap share a COMMIT (group commit, on both
 * stores), and the log then holds one entry per chain for all of them, while the figure is read
 * per entry; one at a time, every event is an entry of its own, as the API writes it when its
 * events do not overlap.
 */
const CONCURRENCY = 1
/** Users sampled for the keyed reads, spread evenly over the store. */
const SAMPLE = 100

const consents = { purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false }], vendors: { enabled: ["v1"] } }

const main = async () => {
  const started = performance.now()
  const cmp = await createPlatform({
    store: store === "postgres" ? postgres({ url: target, maxConnections: 10 }) : sqlite({ filename: target }),
    // The warnings of a server started without its keys configured: this one only writes a copy.
    logLevel: "Error",
    dispatcher: false,
    webhookAllowHosts: ["127.0.0.1"]
  })
  try {
    const operator = cmp.asOperator()
    const org = await cmp.organizations.create({ name: `growth-${events}` }, { as: operator })
    const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as: operator })
    await cmp.premiumFeatures.patch(flags.data[0]!.id, { consents_api: true, webhooks: true }, { as: operator })
    const key = await cmp.keys.create({ organization_id: org.id, name: "growth" }, { as: operator })
    // Nothing delivers while the figures are measured (WEBHOOK_DISPATCHER=false): the address
    // only has to be one the policy lets through.
    await cmp.webhooks.create({ organization_id: org.id, url: "http://127.0.0.1:9/hook", event_types: ["event.created"] }, { as: operator })
    // The principal a request with this key's token has: the events name the key as their source.
    const principal: Principal = { _tag: "Client", keyId: key.id, organizationId: org.id }
    const every = Math.max(1, Math.floor(events / SAMPLE))
    const users: Array<string> = []
    const write = (i: number) =>
      Effect.map(
        ResourceService.create(ConsentEventsResource, principal, {
          organization_id: org.id,
          user: { organization_user_id: `seed-${i}` },
          consents
        }),
        (event) => {
          if (i % every === 0 && users.length < SAMPLE) users.push(event.user.id!)
        }
      )
    const BATCH = Math.max(10_000, Math.ceil(events / 20))
    for (let from = 0; from < events; from += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, events - from) }, (_, k) => from + k)
      await cmp.runtime.runPromise(Effect.forEach(batch, write, { concurrency: CONCURRENCY, discard: true }))
      const seconds = (performance.now() - started) / 1000
      process.stderr.write(`# growth seed (${store}): ${from + batch.length}/${events} events, ${seconds.toFixed(0)} s\n`)
    }
    const seeded = (performance.now() - started) / 1000
    const verification = await cmp.consents.log.verify({ as: cmp.asOrganization(org.id) })
    const verified = (performance.now() - started) / 1000 - seeded
    process.stdout.write(`${JSON.stringify({ organization_id: org.id, key_id: key.id, key_secret: key.secret, users, seeded, verified, verification })}\n`)
  } finally {
    await cmp.dispose()
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
