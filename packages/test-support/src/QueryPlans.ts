/**
 * The hot reads and writes use their indexes: on a store whose consent users, events, webhook
 * messages and attempts number in the tens of thousands, each operation below runs through the
 * ports as a request runs it, every statement it sent is recorded (`Statement.withTransformer`),
 * and the plan of each (SQLite's `EXPLAIN QUERY PLAN` with no statistics, as a store runs;
 * PostgreSQL's `EXPLAIN` after `ANALYZE`) must read none of those tables whole: no full scan, no
 * sort of every row a condition matched, no count of them (a total is read from the counts the
 * store keeps). What a statement reads then does not grow with the table. Run by each store
 * package on its own layer; the seeded store is shared by the suite's tests. `SHOW_PLANS=1`
 * prints every statement with its plan.
 */
import {
  ApiKeysResource,
  AttemptsTable,
  authenticate,
  authenticatePublicKey,
  bootstrap,
  ConsentEventsResource,
  ConsentPoliciesResource,
  type ConsentTokenClaims,
  ConsentUserErasuresTable,
  ConsentUsersResource,
  createSession,
  DeliveriesResource,
  DeliveryQueue,
  deliveryStats,
  eq,
  ExpiryAnnouncements,
  type FieldInfo,
  MailQueue,
  purgeConsentEventsOf,
  requireLiveConsentToken,
  OrganizationsResource,
  PremiumFeaturesResource,
  type Principal,
  ResourceService as RS,
  Storage,
  type StorePorts,
  type TableDef,
  UnitOfWork,
  UrlSigner,
  WebhooksResource
} from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { assert, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { engineLayer } from "./EngineServices.js"

/** Rows of each big table in the organization read (the other organization has a fifth as many). */
const ROWS = 20_000

/** The tables that grow with traffic: a plan may seek into them, never read them whole. */
const big = new Set([
  "consent_users",
  "consent_user_states",
  "consent_events",
  "webhook_deliveries",
  "webhook_attempts",
  "mail_outbox",
  "consent_user_erasures"
])

type Dialect = "sqlite" | "pg"

interface World {
  readonly dialect: Dialect
  readonly organizationId: string
  readonly client: Principal
  readonly publicKey: string
  readonly webhookId: string
}

class Seeded extends Context.Tag("@cmp/test-support/QueryPlans/Seeded")<Seeded, World>() {}

// ---------------------------------------------------------------- seeding

/** A row per `i` in 1..n, each column from `values` or, when not given, a value of its kind. */
const bulkInsert = (dialect: Dialect, table: TableDef, n: number, values: Readonly<Record<string, string>>) => {
  const at = (expression: string) =>
    dialect === "pg"
      ? `TIMESTAMPTZ '2026-01-01T00:00:00Z' + (${expression}) * INTERVAL '1 second'`
      : `strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01T00:00:00', '+' || (${expression}) || ' seconds')`
  const fallback = (info: FieldInfo): string => {
    if (info.nullable) return "NULL"
    switch (info.kind) {
      case "string":
        return "'x'"
      case "number":
        return "1"
      case "boolean":
        return dialect === "pg" ? "false" : "0"
      case "json":
        return dialect === "pg" ? "'{}'::jsonb" : "'{}'"
      case "timestamp":
        return at("i")
    }
    return "NULL"
  }
  const columns = Object.keys(table.fields)
  const expressions = columns.map((c) => values[c] === undefined ? fallback(table.fields[c]!) : values[c]!.replace(/\bAT\((.*?)\)/g, (_, e) => at(e)))
  return `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})
    INSERT INTO ${table.table} (${columns.map((c) => `"${c}"`).join(", ")}) SELECT ${expressions.join(", ")} FROM n`
}

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`

const login = (key: string, secret: string) =>
  Effect.gen(function*() {
    const session = yield* createSession({ type: "api-key", key, secret })
    return (yield* authenticate(session.access_token)) as Principal
  })

const seed = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect: Dialect = sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
  yield* bootstrap({ key: "admin", secret: "admin-secret" })
  const operator = yield* login("admin", "admin-secret")
  const organization = yield* RS.create(OrganizationsResource, operator, { name: "Big" })
  const other = yield* RS.create(OrganizationsResource, operator, { name: "Other" })
  const organizationId = organization.id as string
  const storage = yield* Storage
  const flags = yield* storage.repository(PremiumFeaturesResource.tableDef).find({
    where: [eq("organization_id", organizationId)],
    sort: [],
    limit: 1,
    skip: 0
  })
  yield* RS.patch(PremiumFeaturesResource, operator, flags.data[0]!.id as string, {
    consents_api: true,
    webhooks: true,
    store_guest_cmp_consents: true
  })
  const key = yield* RS.create(ApiKeysResource, operator, { organization_id: organizationId, name: "backend" })
  const client = yield* login(key.id as string, key.secret as string)
  // The policy the consent_state filter reads: durations for both choices, essential purposes, a re-collection date.
  yield* RS.create(ConsentPoliciesResource, client, {
    organization_id: organizationId,
    consent_duration: 3,
    consent_duration_unit: "months",
    denied_consent_duration: 30,
    denied_consent_duration_unit: "days",
    essential_purpose_ids: ["essential"],
    recollect_before: "2026-03-01T00:00:00.000Z"
  })
  const webhookId = "hook-1"
  const now = new Date().toISOString()
  yield* Effect.orDie(storage.repository(WebhooksResource.tableDef).create({
    id: webhookId,
    organization_id: organizationId,
    url: "https://example.com/hook",
    enabled: true,
    event_types: [],
    flatten: false,
    regulations: [],
    auth: null,
    signing_secret_sealed: "sealed:whsec_x",
    previous_secret_sealed: null,
    previous_secret_expires_at: null,
    auth_client_secret_sealed: null,
    created_at: now,
    updated_at: now,
    version: 1
  }))

  const org = literal(organizationId)
  const hook = literal(webhookId)
  const [yes, no] = dialect === "pg" ? ["true", "false"] : ["1", "0"]
  const json = (text: string) => (dialect === "pg" ? `${literal(text)}::jsonb` : literal(text))
  // Nine users in ten have chosen (the database keeps their state rows), a third of them the
  // essential purpose only, their last choices a thousand seconds apart from 2026-01-01 on.
  const isoText = (e: string) =>
    dialect === "pg" ? `to_char((${e}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` : e
  const states = (prefix: string) => {
    const text = `CASE WHEN i % 10 = 0 THEN '{}' ELSE '{"gdpr":{"purposes":[{"id":"' ||
      CASE WHEN i % 3 = 0 THEN 'essential' ELSE 'analytics' END || '","enabled":true}],"vendors":{},"updated_at":"' ||
      ${isoText("AT(i * 1000)")} || '","event_id":"${prefix}e-' || i || '"}}' END`
    return dialect === "pg" ? `(${text})::jsonb` : text
  }
  for (const [owner, prefix, n] of [[org, "", ROWS], [literal(other.id as string), "o-", ROWS / 5]] as const) {
    // Every other user is a known person (an organization's own user id), the rest guests.
    yield* sql.unsafe(bulkInsert(dialect, ConsentUsersResource.tableDef, n, {
      id: `'${prefix}u-' || i`,
      organization_id: owner,
      organization_user_id: `CASE WHEN i % 2 = 0 THEN '${prefix}crm-' || i END`,
      consent_states: states(prefix)
    }))
    yield* sql.unsafe(bulkInsert(dialect, ConsentEventsResource.tableDef, n, {
      id: `'${prefix}e-' || i`,
      organization_id: owner,
      user_id: `'${prefix}u-' || i`,
      organization_user_id: `CASE WHEN i % 2 = 0 THEN '${prefix}crm-' || i END`,
      status: "'confirmed'",
      regulation: "'gdpr'",
      user: json("{}"),
      consents: json("{\"purposes\":[]}"),
      proofs_id: json("[]")
    }))
  }
  // Most messages delivered long ago; a few pending, failed or in flight.
  yield* sql.unsafe(bulkInsert(dialect, DeliveriesResource.tableDef, ROWS, {
    id: "'d-' || i",
    organization_id: org,
    webhook_id: hook,
    event_type: "'event.created'",
    regulation: "'gdpr'",
    status: "CASE i % 100 WHEN 0 THEN 'pending' WHEN 1 THEN 'failed' WHEN 2 THEN 'delivering' ELSE 'delivered' END",
    next_attempt_at: "CASE WHEN i % 100 = 0 THEN AT(i) END",
    lease_until: "CASE WHEN i % 100 = 2 THEN AT(i) END",
    payload: json("{}")
  }))
  yield* sql.unsafe(bulkInsert(dialect, AttemptsTable, ROWS, {
    id: "'a-' || i",
    delivery_id: "'d-' || i",
    organization_id: org,
    webhook_id: hook,
    status_code: "CASE WHEN i % 100 = 1 THEN 500 ELSE 200 END",
    succeeded: `CASE WHEN i % 100 = 1 THEN ${no} ELSE ${yes} END`
  }))
  // Erased users of the organization, one a second from 2026-01-01 00:00:01.
  yield* sql.unsafe(bulkInsert(dialect, ConsentUserErasuresTable, ROWS, { id: "'digest-' || i", organization_id: org, erased_at: "AT(i)" }))
  if (dialect === "pg") yield* sql.unsafe("ANALYZE")
  return { dialect, organizationId, client, publicKey: organization.public_api_key as string, webhookId } satisfies World
})

// ---------------------------------------------------------------- plans

/** Each statement an effect sent, as compiled: its SQL text and parameters. */
const recording = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const sent: Array<readonly [string, ReadonlyArray<unknown>]> = []
    return effect.pipe(
      Statement.withTransformer((statement) =>
        Effect.sync(() => {
          sent.push(statement.compile())
          return statement
        })
      ),
      Effect.map((result) => ({ result, sent }))
    )
  })

/** The table each name in a statement stands for (an alias, or the table itself). */
const namesIn = (text: string) => {
  const names = new Map<string, string>()
  const keywords = new Set(["where", "on", "join", "left", "inner", "set", "order", "group", "limit", "as", "using", "values", "select"])
  for (const m of text.matchAll(/\b(?:FROM|JOIN|UPDATE|INTO)\s+"?(\w+)"?(?:\s+(?:AS\s+)?(\w+))?/gi)) {
    names.set(m[1]!, m[1]!)
    if (m[2] !== undefined && !keywords.has(m[2].toLowerCase())) names.set(m[2], m[1]!)
  }
  return names
}

interface PgNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly Plans?: ReadonlyArray<PgNode>
}

/**
 * What reads a big table whole, in one plan: a full scan, or a sort straight over the rows a
 * scan of a big table found (every row its condition matched is read before the first is
 * answered; an incremental sort of an index's order is not).
 */
const pgFindings = (node: PgNode): Array<string> => {
  const below = (node.Plans ?? []).flatMap(pgFindings)
  const bigScan = (n: PgNode | undefined) => n !== undefined && n["Node Type"].endsWith("Scan") && big.has(n["Relation Name"] ?? "")
  if (node["Node Type"] === "Seq Scan" && bigScan(node)) below.push(`Seq Scan on ${node["Relation Name"]}`)
  if (node["Node Type"] === "Sort" && bigScan(node.Plans?.[0])) below.push(`Sort of every row of ${node.Plans![0]!["Relation Name"]} found`)
  return below
}

/**
 * The same on SQLite: a SCAN of a big table (whole, or along a whole index), or a sorter of the
 * whole order in a statement on a big table alone (a sorter of only the last terms follows an
 * index's order and stops at the limit).
 */
const sqliteFindings = (text: string, details: ReadonlyArray<string>, partial: ReadonlySet<string>): Array<string> => {
  const names = namesIn(text)
  const tables = new Set(names.values())
  const findings: Array<string> = []
  for (const d of details) {
    const scan = /^SCAN (\w+)(?: USING (?:COVERING )?INDEX (\w+))?/.exec(d)
    // A partial index holds only the rows of its condition (the messages of one status): a scan
    // along it reads those, not the table.
    if (scan && big.has(names.get(scan[1]!) ?? scan[1]!) && !partial.has(scan[2] ?? "")) findings.push(d)
    if (/^USE TEMP B-TREE FOR ORDER BY/.test(d) && tables.size === 1 && big.has([...tables][0]!)) findings.push(d)
  }
  return findings
}

/**
 * A count or a sum in a statement on a big table alone reads every row its condition matches,
 * through an index or not: the totals come from the counts the store keeps.
 */
const aggregates = (text: string) => {
  const tables = new Set(namesIn(text).values())
  return /\b(COUNT|SUM)\s*\(/i.test(text) && tables.size === 1 && big.has([...tables][0]!) ? ["an aggregate over a big table"] : []
}

/**
 * The plan of every statement `effect` sends, and what in them reads a big table whole.
 * `noSeqScan`: PostgreSQL plans with sequential scans off, so any Seq Scan left is one no index
 * could replace (its costs would otherwise pick one over a small table's index).
 */
const plansOf = <A, E, R>(effect: Effect.Effect<A, E, R>, noSeqScan = false) =>
  Effect.gen(function*() {
    const { dialect } = yield* Seeded
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const { result, sent } = yield* recording(effect)
    const partial = new Set(
      dialect === "pg"
        ? []
        : (yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'`).map((r) => r.name)
    )
    const plans: Array<{ readonly statement: string; readonly plan: string; readonly findings: ReadonlyArray<string> }> = []
    for (const [text, params] of sent) {
      if (!/^\s*(SELECT|WITH|INSERT|UPDATE|DELETE)\b/i.test(text)) continue
      if (dialect === "pg") {
        const explain = sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PgNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, params)
        const [row] = noSeqScan
          ? yield* sql.withTransaction(Effect.zipRight(sql.unsafe("SET LOCAL enable_seqscan = off"), explain))
          : yield* explain
        const plan = row!["QUERY PLAN"][0]!.Plan
        plans.push({ statement: text, plan: JSON.stringify(plan), findings: [...pgFindings(plan), ...aggregates(text)] })
      } else {
        const rows = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
        const details = rows.map((r) => r.detail)
        plans.push({ statement: text, plan: details.join("; "), findings: [...sqliteFindings(text, details, partial), ...aggregates(text)] })
      }
    }
    return { result, plans }
  })

/** Runs `effect` and fails naming each statement whose plan reads a big table whole. */
const usesIndexes = <A, E, R>(effect: Effect.Effect<A, E, R>, reads: ReadonlyArray<string>, noSeqScan = false) =>
  Effect.gen(function*() {
    const { plans, result } = yield* plansOf(effect, noSeqScan)
    if (process.env.SHOW_PLANS) for (const p of plans) console.log(p.statement.replace(/\s+/g, " ").slice(0, 200), "\n   =>", p.plan)
    const touched = plans.filter((p) => reads.some((t) => new RegExp(`\\b${t}\\b`).test(p.statement)))
    // The operation did read the tables it is about: a test that sent nothing proves nothing.
    assert.isAbove(touched.length, 0, `no statement read ${reads.join(", ")}`)
    const faults = plans.filter((p) => p.findings.length > 0).map((p) => `${p.findings.join(", ")}\n  in ${p.statement}\n  plan ${p.plan}`)
    assert.deepStrictEqual(faults, [])
    return result
  })

// ---------------------------------------------------------------- the suite

const urlSigner = Layer.succeed(UrlSigner, {
  sign: (url) => Effect.succeed(url),
  mac: (purpose, data) => Effect.succeed(Buffer.from(`${purpose}|${data}`).toString("base64url"))
})

const world = (makeStore: () => Layer.Layer<StorePorts | SqlClient.SqlClient>) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const store = yield* Layer.build(makeStore())
    const engine = Layer.mergeAll(engineLayer(Layer.succeedContext(store)), Layer.succeedContext(store), urlSigner)
    const services = yield* Layer.build(engine)
    const seeded = yield* seed.pipe(Effect.provide(services))
    return Layer.merge(Layer.succeedContext(services), Layer.succeed(Seeded, seeded))
  }))

export const queryPlanSuite = (name: string, makeStore: () => Layer.Layer<StorePorts | SqlClient.SqlClient>) =>
  layer(world(makeStore), { timeout: 120_000 })(`query plans: ${name}`, (it) => {
    const page = { $limit: "100", $sort: { created_at: "-1" } }

    it.effect("a page of consent users, newest first, and the next by offset", () =>
      Effect.gen(function*() {
        const { client } = yield* Seeded
        const first = yield* usesIndexes(RS.find(ConsentUsersResource, client, page), ["consent_users"])
        assert.strictEqual(first.data.length, 100)
        assert.strictEqual(first.total, ROWS)
        yield* usesIndexes(RS.find(ConsentUsersResource, client, { ...page, $skip: "100" }), ["consent_users"])
      }))

    it.effect("consent users by cursor: the first page and the next", () =>
      Effect.gen(function*() {
        const { client } = yield* Seeded
        const first = yield* usesIndexes(RS.findAsRequested(ConsentUsersResource, client, { $limit: "100", $cursor: "" }), ["consent_users"])
        assert.isTrue("cursor" in first && typeof first.cursor === "string")
        const cursor = (first as { cursor: string }).cursor
        yield* usesIndexes(RS.findAsRequested(ConsentUsersResource, client, { $limit: "100", $cursor: cursor }), ["consent_users"])
      }))

    it.effect("consent users by consent_state: pages by cursor and by offset reach each user's state row by its key", () =>
      Effect.gen(function*() {
        const { client } = yield* Seeded
        yield* TestClock.setTime(Date.parse("2026-06-15T00:00:00.000Z"))
        const states = ["consent_users", "consent_user_states"]
        const expired = yield* usesIndexes(
          RS.findAsRequested(ConsentUsersResource, client, { consent_state: "expired", $limit: "100", $cursor: "" }),
          states,
          true
        )
        assert.strictEqual(expired.data.length, 100)
        for (const u of expired.data) assert.strictEqual(u.consent_state, "expired")
        const cursor = (expired as { cursor: string }).cursor
        yield* usesIndexes(RS.findAsRequested(ConsentUsersResource, client, { consent_state: "expired", $limit: "100", $cursor: cursor }), states, true)
        const some = yield* usesIndexes(
          RS.findAsRequested(ConsentUsersResource, client, { consent_state: { $in: ["given", "refused", "recollect"] }, $limit: "100", $cursor: "" }),
          states,
          true
        )
        assert.strictEqual(some.data.length, 100)
        const none = yield* usesIndexes(RS.find(ConsentUsersResource, client, { consent_state: "none", $limit: "100" }), states, true)
        assert.strictEqual(none.total, ROWS / 10)
        for (const u of none.data) assert.strictEqual(u.consent_state, "none")
      }))

    it.effect("a consent user by id, and by the organization's own user id", () =>
      Effect.gen(function*() {
        const { client } = yield* Seeded
        const byId = yield* usesIndexes(RS.getAsRequested(ConsentUsersResource, client, "u-1234"), ["consent_users"])
        assert.strictEqual(byId.id, "u-1234")
        const byOwn = yield* usesIndexes(
          RS.getAsRequested(ConsentUsersResource, client, "crm-1234", { query: { $by_organization_user_id: "true" } }),
          ["consent_users"]
        )
        assert.strictEqual(byOwn.id, "u-1234")
      }))

    it.effect("a page of consent events, by offset and by cursor", () =>
      Effect.gen(function*() {
        const { client } = yield* Seeded
        const first = yield* usesIndexes(RS.find(ConsentEventsResource, client, page), ["consent_events"])
        assert.strictEqual(first.total, ROWS)
        yield* usesIndexes(RS.findAsRequested(ConsentEventsResource, client, { $limit: "100", $cursor: "" }), ["consent_events"])
      }))

    it.effect("a page of the delivery log, and the delivery stats", () =>
      Effect.gen(function*() {
        const { client, organizationId } = yield* Seeded
        yield* usesIndexes(RS.find(DeliveriesResource, client, page), ["webhook_deliveries"])
        const [stats] = yield* usesIndexes(deliveryStats(client, organizationId), ["webhook_deliveries", "webhook_attempts"])
        assert.strictEqual(stats!.counts.delivered + stats!.counts.pending + stats!.counts.failed + stats!.counts.delivering, ROWS)
        assert.isNotNull(stats!.last_success_at)
        assert.isNotNull(stats!.last_failure_at)
      }))

    it.effect("the dispatcher's claim of due messages, and when the next is due", () =>
      Effect.gen(function*() {
        const queue = yield* DeliveryQueue
        const now = new Date().toISOString()
        const claimed = yield* usesIndexes(
          queue.claim({ now, leaseUntil: new Date(Date.now() + 60_000).toISOString(), workerId: "w", limit: 32 }),
          ["webhook_deliveries"]
        )
        assert.strictEqual(claimed.length, 32)
        yield* usesIndexes(queue.nextDueAt(), ["webhook_deliveries"])
      }))

    it.effect("the outbox is read by status through the partial index of that status", () =>
      Effect.gen(function*() {
        const { client, organizationId } = yield* Seeded
        const queue = yield* DeliveryQueue
        // A message's move from one status to the next touches only the indexes of those two
        // statuses: each read by status must then go through the index of its status.
        const expect = [
          [queue.nextDueAt(), /status = 'pending' ORDER BY next_attempt_at/, "webhook_deliveries_due"],
          [deliveryStats(client, organizationId), /d\.status = 'pending'/, "webhook_deliveries_webhook_pending"],
          // Before every message of the seed: it picks none, and so removes none.
          [queue.purgeDelivered({ before: "2025-01-01T00:00:00.000Z", limit: 5 }), /status = 'delivered' AND updated_at </, "webhook_deliveries_finished"]
        ] as const
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const definitions = new Map(
          (yield* sql.onDialectOrElse({
            pg: () => sql<{ name: string; definition: string }>`SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE tablename = 'webhook_deliveries'`,
            orElse: () => sql<{ name: string; definition: string }>`SELECT name, sql AS definition FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_deliveries'`
          })).map((r) => [r.name, r.definition])
        )
        for (const [effect, statement, index] of expect) {
          const { plans } = yield* plansOf(effect as Effect.Effect<unknown>)
          const reading = plans.filter((p) => statement.test(p.statement.replace(/\s+/g, " ")))
          assert.isAbove(reading.length, 0, `no statement matched ${statement}`)
          for (const p of reading) assert.include(p.plan, index, p.statement)
          assert.match(definitions.get(index) ?? "", /WHERE/i, `${index} holds only the messages of its status`)
        }
      }))

    it.effect("the dispatcher's reads of leases go through an index of leased messages only", () =>
      Effect.gen(function*() {
        yield* Seeded
        const queue = yield* DeliveryQueue
        const now = new Date().toISOString()
        // On PostgreSQL a `(status, …)` index also holds an entry of every message delivered since
        // the last vacuum in its `delivering` range: a claim or an idle wait that read leases
        // through one read all of those, and their rows, each time. The index of leased messages
        // holds the messages in flight only, on both stores.
        const leases = (text: string) => /status = 'delivering' AND \(?(lease_until|webhook_id)/.test(text.replace(/\s+/g, " "))
        const reads: ReadonlyArray<Effect.Effect<unknown>> = [
          queue.claim({ now, leaseUntil: new Date(Date.now() + 60_000).toISOString(), workerId: "w2", limit: 8 }),
          queue.nextDueAt()
        ]
        for (const effect of reads) {
          const { plans } = yield* plansOf(effect)
          const reading = plans.filter((p) => leases(p.statement))
          assert.isAbove(reading.length, 0, "no statement read the leases")
          for (const p of reading) {
            assert.include(p.plan, "webhook_deliveries_leased", p.statement)
          }
        }
      }))

    it.effect("the expiry sweep: a range of due users a page at a time, and the guarded mark", () =>
      Effect.gen(function*() {
        const { organizationId } = yield* Seeded
        const store = yield* ExpiryAnnouncements
        const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString()
        // The state rows the users' choices gave (every tenth user has none), a thousand seconds apart.
        const range = { organizationId, regulation: "gdpr", upTo: at(1_100_000), limit: 20 }
        const first = yield* usesIndexes(store.due({ ...range, after: { at: at(1_000_000) } }), ["consent_user_states"])
        assert.deepStrictEqual(first.map((r) => r.user_id), [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1011, 1012, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 1021, 1022].map((i) => `u-${i}`))
        const last = first[first.length - 1]!
        yield* usesIndexes(store.due({ ...range, after: { at: last.last_event_at, userId: last.user_id } }), ["consent_user_states"])
        const uow = yield* UnitOfWork
        const marked = yield* usesIndexes(
          uow.transaction(store.announce({ organizationId, userId: "u-1001", regulation: "gdpr", lastEventId: "e-1001" })),
          ["consent_user_states"]
        )
        assert.isTrue(marked)
      }))

    it.effect("a public write: a guest the store knows, and a new one", () =>
      Effect.gen(function*() {
        const { publicKey } = yield* Seeded
        const body = (id: string) => ({
          user: { id },
          consents: { purposes: [{ id: "analytics", enabled: true }] }
        })
        const known = yield* usesIndexes(
          Effect.flatMap(authenticatePublicKey(publicKey), (p) => RS.create(ConsentEventsResource, p, body("u-1235"))),
          ["consent_users", "consent_events"]
        )
        assert.strictEqual(known.status, "confirmed")
        yield* usesIndexes(
          Effect.flatMap(authenticatePublicKey(publicKey), (p) => RS.create(ConsentEventsResource, p, body("guest-new"))),
          ["consent_users", "consent_events"]
        )
      }))

    it.effect("a backend's write: a new user named by the organization's own user id, and a known one", () =>
      Effect.gen(function*() {
        const { client, organizationId } = yield* Seeded
        const body = (own: string) => ({
          organization_id: organizationId,
          user: { organization_user_id: own },
          consents: { purposes: [{ id: "analytics", enabled: true }] }
        })
        const fresh = yield* usesIndexes(RS.create(ConsentEventsResource, client, body("crm-new")), ["consent_users", "consent_events"])
        assert.strictEqual(fresh.status, "confirmed")
        const known = yield* usesIndexes(RS.create(ConsentEventsResource, client, body("crm-1236")), ["consent_users", "consent_events"])
        assert.strictEqual(known.user.id, "u-1236")
      }))

    it.effect("a public key no organization holds is looked for as a current key, then as a replaced one, each by its index", () =>
      Effect.gen(function*() {
        const { dialect } = yield* Seeded
        const { plans, result } = yield* plansOf(Effect.either(authenticatePublicKey(`pk_${"n".repeat(32)}`)), true)
        assert.isTrue(result._tag === "Left")
        const lookUps = plans.filter((p) => /\borganizations\b/.test(p.statement))
        assert.deepStrictEqual(lookUps.map((p) => /previous_public_api_key/.test(p.statement)), [false, true])
        const whole = lookUps.filter((p) => (dialect === "pg" ? /"Seq Scan"/.test(p.plan) : /\bSCAN organizations\b/.test(p.plan)))
        assert.deepStrictEqual(whole.map((p) => `${p.statement}\n  plan ${p.plan}`), [])
      }))

    it.effect("a consent token's erasure check: the organization's latest erasure by its index, its own user's only for a token older than that", () =>
      Effect.gen(function*() {
        const { organizationId } = yield* Seeded
        const claims = (issued: string): ConsentTokenClaims => {
          const iat = Date.parse(issued) / 1000
          return { jti: "j", org: organizationId, sub: "crm-someone", iat, exp: iat + 3600, issuer: { kind: "host", id: "host" } }
        }
        const erasureReads = (plans: ReadonlyArray<{ readonly statement: string }>) =>
          plans.filter((p) => /\bconsent_user_erasures\b/.test(p.statement)).map((p) => p.statement)
        const newer = yield* plansOf(requireLiveConsentToken(claims("2026-06-01T00:00:00Z")), true)
        const newerReads = erasureReads(newer.plans)
        assert.strictEqual(newerReads.length, 1, newerReads.join("\n"))
        assert.match(newerReads[0]!, /ORDER BY/)
        assert.deepStrictEqual(newer.plans.flatMap((p) => p.findings), [])
        const older = yield* plansOf(requireLiveConsentToken(claims("2026-01-01T03:00:00Z")), true)
        const ownRead = erasureReads(older.plans).filter((statement) => !/ORDER BY/.test(statement))
        assert.strictEqual(ownRead.length, 1)
        assert.deepStrictEqual(older.plans.flatMap((p) => p.findings), [])
      }))

    // Last: it removes seeded rows.
    it.effect("the retention purges: a batch of delivered messages with their attempts, finished mails, an organization's inactive users' events", () =>
      Effect.gen(function*() {
        const { organizationId } = yield* Seeded
        const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString()
        const queue = yield* DeliveryQueue
        // Messages finished a second apart: of the first thousand, 970 are delivered. PostgreSQL
        // plans with sequential scans off: 500 look-ups may cost more than a scan of this seeded
        // table, never of a table grown large; what must not be left is a scan no index replaces.
        const purged = yield* usesIndexes(queue.purgeDelivered({ before: at(1000), limit: 500 }), ["webhook_deliveries", "webhook_attempts"], true)
        assert.strictEqual(purged, 500)
        yield* usesIndexes(Effect.flatMap(MailQueue, (mails) => mails.purgeDone({ before: at(1000), limit: 500 })), ["mail_outbox"], true)
        // Users last changed a second apart: 149 are inactive for 30 days at this time, each with one event.
        yield* TestClock.setTime(Date.parse(at(150)) + 30 * 24 * 3600_000)
        const removed = yield* usesIndexes(
          purgeConsentEventsOf(organizationId, 30, { pause: Effect.void }),
          ["consent_users", "consent_events"],
          true
        )
        assert.strictEqual(removed, 149)
      }), 120_000)
  })
