import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { isAllowedHost, isNonPublicHostName } from "../AddressPolicy.js"
import { nowIso } from "../Clock.js"
import { Timestamp } from "../Domain/Common.js"
import { Regulation } from "../Domain/Consent.js"
import { Conflict, InvalidInput } from "../Domain/Errors.js"
import {
  Webhook,
  type WebhookAuthInput,
  WebhookCreate,
  WebhookDelivery,
  WebhookEventType,
  WebhookUpdate
} from "../Domain/Webhook.js"
import { Storage, type TableDef } from "../Ports.js"
import { isOperator, type Principal } from "../Principal.js"
import { eq, notPrefixed } from "../Query.js"
import { sortableId } from "../Random.js"
import {
  declareResource,
  defineResource,
  defineTable,
  field,
  jsonField,
  ownedByOrganization,
  type StoredRow
} from "../Resource.js"
import { decode, loadVisible, requireFeatureBeforeBody, toOutput } from "../Service.js"
import { Settings } from "../Settings.js"
import { flattenPayload } from "../Webhooks/Flatten.js"
import {
  type Endpoint,
  Endpoints,
  forgetEndpoint,
  SecretBox,
  SUBSCRIBER_PREFIX,
  subscriberOf,
  subscriberTarget
} from "../Webhooks/Ports.js"

// ---------------------------------------------------------------- receiver URLs

/**
 * A receiver (or token, or export destination) URL must be https; plain http, and hosts that are
 * non-public by name (loopback, private, link-local... literals in any of their IPv4-mapped,
 * NAT64 or 6to4 forms, and `localhost`), only for hosts in `WEBHOOK_ALLOW_HOSTS`. Names that
 * resolve to non-public addresses are refused again at delivery time, after resolution, by the
 * same policy (`AddressPolicy`).
 */
export const checkReceiverUrl = (url: string, fieldName: string, allowHosts: ReadonlyArray<string>) => {
  const u = new URL(url)
  const allowed = isAllowedHost(u.hostname, allowHosts)
  const fail = (m: string) => Effect.fail(new InvalidInput({ message: `Invalid ${fieldName}: ${m}`, errors: { [fieldName]: m } }))
  if (u.username || u.password) return fail("must not carry credentials")
  if (u.protocol === "http:" && !allowed) {
    return fail("plain http is only allowed for hosts listed in WEBHOOK_ALLOW_HOSTS; use https")
  }
  if (u.protocol !== "https:" && !allowed) return fail("must be an https URL")
  if (isNonPublicHostName(u.hostname) && !allowed) return fail("must not point at a private, loopback or link-local address")
  return Effect.void
}

// ---------------------------------------------------------------- configuration

const signingSecret = () => {
  const bytes = new Uint8Array(32)
  globalThis.crypto.getRandomValues(bytes)
  return `whsec_${btoa(String.fromCharCode(...bytes))}`
}

const Webhooks = declareResource({
  name: "webhook",
  path: "webhooks",
  table: "webhooks",
  indexes: [{ name: "webhooks_organization", columns: ["organization_id", "created_at"] }],
  output: Webhook,
  createInput: WebhookCreate,
  updateInput: WebhookUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  premiumFeature: "webhooks",
  // Every webhook counts, enabled or not: enabling one is an update, which no quota checks.
  quota: "webhooks",
  transient: ["signing_secret"],
  // Every answer: receiver and token URLs often carry a credential in their path or query.
  revealsCredentials: "every",
  privateFields: { signing_secret_sealed: field.string, auth_client_secret_sealed: field.optionalString },
  defaults: { enabled: true, event_types: [], flatten: false, regulations: ["gdpr"], auth: null }
})

/** Splits write-only secrets out of the input into sealed private columns. */
const sealAuth = (row: StoredRow<typeof Webhooks>, input: { readonly auth?: WebhookAuthInput | null | undefined }) =>
  Effect.gen(function*() {
    const auth = input.auth
    if (!("auth" in input) || auth === undefined) return row
    if (auth === null) return { ...row, auth: null, auth_client_secret_sealed: null }
    const settings = yield* Settings
    yield* checkReceiverUrl(auth.token_url, "auth.token_url", settings.webhookAllowHosts)
    const { client_secret, ...shown } = auth
    const sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(client_secret))
    return { ...row, auth: shown, auth_client_secret_sealed: sealed }
  })

export const WebhooksResource = Webhooks.with({
  ports: [Endpoints],
  hooks: {
    create: (_p, row, input) =>
      Effect.gen(function*() {
        const settings = yield* Settings
        yield* checkReceiverUrl(row.url, "url", settings.webhookAllowHosts)
        const secret = signingSecret()
        const sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(secret))
        const withAuth = yield* sealAuth({ ...row, signing_secret_sealed: sealed }, input)
        return { row: withAuth, reveal: { signing_secret: secret } }
      }),
    update: (_p, _before, after, input) =>
      Effect.gen(function*() {
        const settings = yield* Settings
        if ("url" in input) yield* checkReceiverUrl(after.url, "url", settings.webhookAllowHosts)
        return yield* sealAuth(after, input)
      }),
    afterCommit: (output) => forgetEndpoint(output.id)
  }
})

// ---------------------------------------------------------------- the outbox

/** A message about one change, before it is addressed to the organization's webhooks. */
export interface OutgoingEvent {
  readonly type: WebhookEventType
  readonly regulation: string
  readonly parameters: Record<string, unknown>
}


export const DeliveriesResource = defineResource({
  name: "webhook delivery",
  path: "webhooks/deliveries",
  table: "webhook_deliveries",
  indexes: [
    { name: "webhook_deliveries_due", columns: ["status", "next_attempt_at"] },
    { name: "webhook_deliveries_organization", columns: ["organization_id", "created_at"] },
    { name: "webhook_deliveries_webhook", columns: ["webhook_id", "status", "created_at"] }
  ],
  output: WebhookDelivery,
  methods: ["find", "get"],
  ownerField: "organization_id",
  premiumFeature: "webhooks",
  transient: ["attempts"],
  privateFields: { lease_until: field.optionalTimestamp, leased_by: field.optionalString },
  hooks: {
    // An in-process subscriber's messages are the host's, not the organization's, though they
    // carry the organization of the change: only the operator sees them through the API.
    find: (principal, query) =>
      Effect.succeed(isOperator(principal) ? query : { ...query, where: [...query.where, notPrefixed("webhook_id", SUBSCRIBER_PREFIX)] }),
    visible: (principal, row) => isOperator(principal) || subscriberOf(row.webhook_id) === undefined,
    expand: (_p, row, output) =>
      Effect.map(
        Effect.flatMap(Storage, (s) =>
          s.repository(AttemptsTable).find({
            count: false,
            where: [eq("delivery_id", row.id)],
            sort: [{ field: "attempted_at", direction: 1 }],
            limit: 1000,
            skip: 0
          })),
        (page) => ({
          ...output,
          attempts: page.data.map(({ organization_id: _o, ...a }) => a)
        })
      )
  }
})

/** The log of delivery attempts: private to the platform, read through a delivery's `get`. */
export const AttemptsTable = defineTable("webhook_attempts", {
  id: field.string,
  delivery_id: field.string,
  organization_id: field.string,
  attempted_at: field.timestamp,
  status_code: field.optionalNumber,
  duration_ms: field.number,
  error: field.optionalString,
  response_excerpt: field.optionalString
}, {
  indexes: [{ name: "webhook_attempts_delivery", columns: ["delivery_id", "attempted_at"] }],
  references: [ownedByOrganization],
  defaultSort: [{ field: "attempted_at", direction: 1 }]
})

// ---------------------------------------------------------------- in-process subscribers

/**
 * The registrations of in-process subscribers (`createPlatform(...).subscribe`): durable, so a
 * subscriber's messages are written to the outbox whether or not a process has its handler at
 * the time, and handled once one does. Platform-wide: a subscriber sees every organization's
 * changes. Not a REST resource.
 */
export const SubscribersTable = defineTable("subscribers", {
  id: field.string,
  event_types: jsonField<ReadonlyArray<WebhookEventType>>(),
  regulations: jsonField<ReadonlyArray<string>>(),
  flatten: field.boolean,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
})

export type SubscriberRow = typeof SubscribersTable extends TableDef<infer A> ? A : never

/** A subscriber's name: what follows `subscriber:` in its messages' `webhook_id`. */
export const SubscriberName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
    message: () => "must be 1 to 100 letters, digits, dots, dashes or underscores, starting with a letter or digit"
  })
)

/** A subscriber's filters, as a webhook's: every event type when empty, GDPR only by default. */
export const SubscriberFilters = Schema.Struct({
  event_types: Schema.optional(Schema.Array(WebhookEventType)),
  regulations: Schema.optional(Schema.Array(Regulation)),
  flatten: Schema.optional(Schema.Boolean)
})

/**
 * `enqueue` runs on every consent event: the subscriber list is kept for a second per store
 * (keyed by the `Storage` service, so two platforms of one process keep their own). A change
 * through this process drops it at once; one made by another process is seen within the second.
 */
const SUBSCRIBERS_TTL_MS = 1000
const subscriberLists = new WeakMap<object, { readonly until: number; readonly rows: ReadonlyArray<SubscriberRow> }>()

/** Drops this process's copy of the subscriber list (after a registration changed). */
export const forgetSubscribers: Effect.Effect<void, never, Storage> = Effect.map(Storage, (s) => void subscriberLists.delete(s))

const subscriberList = Effect.gen(function*() {
  const storage = yield* Storage
  const now = Date.now()
  const hit = subscriberLists.get(storage)
  if (hit && hit.until > now) return hit.rows
  const page = yield* storage.repository(SubscribersTable).find({
    count: false,
    where: [],
    sort: [],
    ordered: false,
    limit: 1000,
    skip: 0
  })
  subscriberLists.set(storage, { until: now + SUBSCRIBERS_TTL_MS, rows: page.data })
  return page.data
})

/** Creates or replaces a subscriber's registration (its filters); answers the stored row. */
export const saveSubscriber = (name: string, filters: unknown) =>
  Effect.gen(function*() {
    const decodedName = decode(SubscriberName, name)
    if (Either.isLeft(decodedName)) {
      return yield* Effect.fail(new InvalidInput({ message: `Invalid subscriber name: ${JSON.stringify(name)}`, errors: { name: "invalid" } }))
    }
    const decoded = decode(SubscriberFilters, filters ?? {})
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const repo = (yield* Storage).repository(SubscribersTable)
    const values = {
      event_types: decoded.right.event_types ?? [],
      regulations: decoded.right.regulations ?? ["gdpr"],
      flatten: decoded.right.flatten ?? false
    }
    // Two processes registering the same name at once: the loser of the race reads again.
    for (let i = 0; ; i++) {
      const now = yield* nowIso
      const found = yield* repo.get(name)
      const saved = Option.isNone(found)
        ? yield* Effect.either(repo.create({ id: name, ...values, created_at: now, updated_at: now, version: 1 }))
        : yield* Effect.either(repo.patch(name, { ...values, updated_at: now }, found.value.version))
      if (Either.isRight(saved)) {
        yield* forgetSubscribers
        return saved.right
      }
      if (i >= 4) return yield* Effect.fail(new Conflict({ message: `The subscriber ${name} changed concurrently` }))
    }
  })

/** Deletes a subscriber's registration: no more messages are written for it. Answers whether it existed. */
export const deleteSubscriber = (name: string) =>
  Effect.gen(function*() {
    const removed = yield* Effect.orDie((yield* Storage).repository(SubscribersTable).remove(name))
    yield* forgetSubscribers
    return Option.isSome(removed)
  })

/** How many webhooks `enqueue` reads at a time, and how many messages it writes per statement. */
const ENQUEUE_PAGE = 500

interface Target {
  readonly id: string
  readonly event_types: ReadonlyArray<WebhookEventType>
  readonly regulations: ReadonlyArray<string> | null | undefined
  readonly flatten: boolean | null | undefined
}

/**
 * Addresses the messages of a change to every enabled webhook of the organization, and to every
 * registered in-process subscriber, whose filters accept them, as outbox rows written in the
 * caller's transaction: the change and its messages commit together or not at all. Every
 * enabled webhook gets its message however many there are (the `webhooks` quota bounds them):
 * they are read a page at a time, in the order of their ids, and the rows written in batches.
 */
export const enqueue = (organizationId: string, events: ReadonlyArray<OutgoingEvent>) =>
  Effect.gen(function*() {
    if (events.length === 0) return 0
    const storage = yield* Storage
    const deliveries = storage.repository(DeliveriesResource.tableDef)
    const now = yield* nowIso
    let written = 0
    const write = (targets: ReadonlyArray<Target>) =>
      Effect.gen(function*() {
        const rows = messagesOf(organizationId, targets, events, now)
        for (let i = 0; i < rows.length; i += ENQUEUE_PAGE) {
          yield* Effect.orDie(deliveries.insert(rows.slice(i, i + ENQUEUE_PAGE)))
        }
        written += rows.length
      })
    const webhooks = storage.repository(WebhooksResource.tableDef)
    let after: string | undefined
    for (;;) {
      const page = yield* webhooks.find({
        count: false,
        where: [eq("organization_id", organizationId), eq("enabled", true)],
        sort: [],
        keyset: { fields: ["id"], after: after === undefined ? undefined : [after] },
        limit: ENQUEUE_PAGE,
        skip: 0
      })
      yield* write(page.data)
      if (page.data.length < ENQUEUE_PAGE) break
      after = page.data[page.data.length - 1]!.id
    }
    const subscribers = yield* subscriberList
    yield* write(subscribers.map((s) => ({ ...s, id: subscriberTarget(s.id) })))
    return written
  })

/** The outbox rows of a change's messages to the targets whose filters accept them. */
const messagesOf = (
  organizationId: string,
  targets: ReadonlyArray<Target>,
  events: ReadonlyArray<OutgoingEvent>,
  now: string
): Array<StoredRow<typeof DeliveriesResource>> => {
  const rows: Array<StoredRow<typeof DeliveriesResource>> = []
  for (const hook of targets) {
    const types = hook.event_types
    const regulations = hook.regulations ?? ["gdpr"]
    for (const event of events) {
      if (types.length > 0 && !types.includes(event.type)) continue
      if (!regulations.includes(event.regulation)) continue
      const body = { type: event.type, parameters: event.parameters, regulation: event.regulation }
      rows.push({
        id: `msg_${sortableId(Date.parse(now))}`,
        organization_id: organizationId,
        webhook_id: hook.id,
        event_type: event.type,
        regulation: event.regulation,
        status: "pending",
        attempts_count: 0,
        next_attempt_at: now,
        last_status_code: null,
        payload: hook.flatten === true ? flattenPayload(body) : body,
        lease_until: null,
        leased_by: null,
        created_at: now,
        updated_at: now,
        version: 1
      })
    }
  }
  return rows
}

// ---------------------------------------------------------------- endpoints for the dispatcher

/**
 * The dispatcher reads a webhook (and opens its sealed secrets) for every message; a copy is kept
 * for a second. A change through this process drops it at once (`forgetEndpoint` after the
 * commit); one made through another server process is seen within `ENDPOINT_TTL_MS`.
 */
const ENDPOINT_TTL_MS = 1000

export const EndpointsLive = Effect.gen(function*() {
  const storage = yield* Storage
  const box = yield* SecretBox
  const repo = storage.repository(WebhooksResource.tableDef)
  const kept = new Map<string, { readonly endpoint: Option.Option<Endpoint>; readonly until: number }>()
  const load = (id: string) =>
    Effect.gen(function*() {
      const row = yield* repo.get(id)
      if (Option.isNone(row)) return Option.none<Endpoint>()
      const w = row.value
      const auth = w.auth
      return Option.some<Endpoint>({
        id: w.id,
        organization_id: w.organization_id,
        url: w.url,
        enabled: w.enabled === true,
        signingSecret: yield* box.open(w.signing_secret_sealed),
        auth: auth && typeof w.auth_client_secret_sealed === "string"
          ? {
            token_url: auth.token_url,
            client_id: auth.client_id,
            client_secret: yield* box.open(w.auth_client_secret_sealed),
            scope: auth.scope,
            audience: auth.audience
          }
          : null
      })
    })
  const forget = (id: string) => Effect.sync(() => void kept.delete(id))
  return Endpoints.of({
    get: (id) =>
      Effect.suspend(() => {
        const now = Date.now()
        const hit = kept.get(id)
        if (hit && hit.until > now) return Effect.succeed(hit.endpoint)
        return Effect.tap(load(id), (endpoint) => {
          if (kept.size >= 10_000) kept.clear()
          kept.set(id, { endpoint, until: now + ENDPOINT_TTL_MS })
        })
      }),
    forget,
    disable: (id, _reason) =>
      Effect.gen(function*() {
        // A concurrent edit of the webhook wins the version race: read again and retry.
        for (let i = 0; i < 5; i++) {
          const row = yield* repo.get(id)
          if (Option.isNone(row) || row.value.enabled === false) return
          const done = yield* repo.patch(id, { enabled: false, updated_at: yield* nowIso }, row.value.version)
            .pipe(Effect.as(true), Effect.catchAll(() => Effect.succeed(false)))
          if (done) return
        }
      }).pipe(Effect.ensuring(forget(id)))
  })
})

// ---------------------------------------------------------------- replay

/**
 * Re-enqueues one failed message with a fresh retry schedule; its attempt log is kept. A
 * delivered message is not sent again, and a pending or delivering one is already on its way:
 * both are a 409, so a replay never makes a receiver see a message twice on purpose.
 */
export const replayDelivery = (principal: Principal, id: string) =>
  Effect.gen(function*() {
    const row = yield* loadVisible(DeliveriesResource, principal, id)
    if (row.status !== "failed") {
      const why = row.status === "delivered" ? "was delivered" : `is already ${row.status}`
      return yield* Effect.fail(
        new Conflict({ message: `The delivery '${id}' ${why}: only a failed message can be replayed` })
      )
    }
    const now = yield* nowIso
    const repo = (yield* Storage).repository(DeliveriesResource.tableDef)
    const stored = yield* repo.patch(id, {
      status: "pending",
      attempts_count: 0,
      next_attempt_at: now,
      lease_until: null,
      leased_by: null,
      updated_at: now
    }, row.version)
    return toOutput(DeliveriesResource, stored)
  })

export const ReplayRange = Schema.Struct({
  webhook_id: Schema.String,
  from: Schema.optional(Timestamp),
  to: Schema.optional(Timestamp)
})

/** Re-enqueues every failed message of one webhook created in [from, to]. */
export const replayFailed = (principal: Principal, body: unknown) =>
  Effect.gen(function*() {
    // The webhook named in the body gives the organization: gated on the principal's until then.
    yield* requireFeatureBeforeBody(WebhooksResource, principal, body, undefined)
    const decoded = decode(ReplayRange, body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const { from, to, webhook_id } = decoded.right
    yield* loadVisible(WebhooksResource, principal, webhook_id)
    const repo = (yield* Storage).repository(DeliveriesResource.tableDef)
    const now = yield* nowIso
    const where = [
      eq("webhook_id", webhook_id),
      eq("status", "failed"),
      ...(from ? [{ _tag: "Compare" as const, field: "created_at", op: "gte" as const, value: new Date(from).toISOString() }] : []),
      ...(to ? [{ _tag: "Compare" as const, field: "created_at", op: "lte" as const, value: new Date(to).toISOString() }] : [])
    ]
    let replayed = 0
    // Rows that changed meanwhile stay failed; skipping past them keeps the loop finite.
    let skipped = 0
    for (;;) {
      const page = yield* repo.find({ count: false, where, sort: [], limit: 500, skip: skipped })
      if (page.data.length === 0) break
      for (const d of page.data) {
        const ok = yield* repo.patch(d.id, {
          status: "pending",
          attempts_count: 0,
          next_attempt_at: now,
          lease_until: null,
          leased_by: null,
          updated_at: now
        }, d.version).pipe(Effect.as(true), Effect.catchAll(() => Effect.succeed(false)))
        if (ok) replayed++
        else skipped++
      }
    }
    return { webhook_id, replayed }
  })
