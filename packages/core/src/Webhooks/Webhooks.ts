import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { answers, defineAction } from "../Engine/Action.js"
import { isAllowedHost, isNonPublicHostName } from "../Operations/AddressPolicy.js"
import { nowIso, nowMillis } from "../Engine/Clock.js"
import { exampleIds, Timestamp } from "../Domain/Common.js"
import { Conflict, Forbidden, InvalidInput } from "../Domain/Errors.js"
import {
  Webhook,
  type WebhookAuthInput,
  WebhookCreate,
  WebhookDelivery,
  WebhookUpdate
} from "../Domain/Webhook.js"
import { Storage } from "../Engine/Ports.js"
import { isEndUser, isOperator, type Principal, requireOrganization } from "../Engine/Principal.js"
import { eq, notPrefixed } from "../Engine/Query.js"
import { declareResource, defineResource, portList, type StoredRow } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { decode } from "../Engine/Bodies.js"
import { loadVisible } from "../Engine/Reads.js"
import { requireExistingOrganization, requireFeature, requireFeatureBeforeBody } from "../Engine/Gates.js"
import { toOutput } from "../Engine/Views.js"
import { Settings } from "../Engine/Settings.js"
import { Endpoints, forgetEndpoint, SUBSCRIBER_PREFIX, subscriberOf } from "./Ports.js"
import { forgetTargets, WebhookTargets } from "./Targets.js"
import { announceWebhookChange } from "./Changes.js"
import { SecretBox } from "../Engine/Secrets.js"
import { AttemptsTable, DeliveriesTable, DeliveryIndexes, DeliveryLeaseFields, DeliveryTraceFields } from "./Tables.js"
import { type DeliveryStatsRecord, DeliveryStats, DeliveryStatsList, type WebhookDeliveryStats } from "./DeliveryStats.js"

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

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export const newSigningSecret = () => {
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
  // The secret a rotation replaced, sealed like the current one, kept while its overlap runs
  // (`previous_secret_expires_at`); never shown.
  privateFields: {
    signing_secret_sealed: field.string,
    previous_secret_sealed: field.optionalString,
    auth_client_secret_sealed: field.optionalString
  },
  defaults: { enabled: true, event_types: [], flatten: false, regulations: ["gdpr"], auth: null }
})

/**
 * Whether a rotation's overlap still runs at `nowMs`: its replaced secret signs beside the
 * current one until `previous_secret_expires_at`. The columns stay once it has passed; they are
 * read as no overlap.
 */
export const overlapRuns = (
  row: { readonly previous_secret_sealed: string | null; readonly previous_secret_expires_at: string | null },
  nowMs: number
): row is { readonly previous_secret_sealed: string; readonly previous_secret_expires_at: string } =>
  row.previous_secret_sealed !== null && row.previous_secret_expires_at !== null &&
  Date.parse(row.previous_secret_expires_at) > nowMs

/** A webhook as answered: the end of an overlap only while it runs, null otherwise. */
const presentWebhooks = (rows: ReadonlyArray<StoredRow<typeof Webhooks>>) =>
  Effect.map(nowMillis, (nowMs) =>
    rows.map((row) => toOutput(Webhooks, overlapRuns(row, nowMs) ? row : { ...row, previous_secret_expires_at: null })))

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

export const WebhooksResource = Webhooks.with<Endpoints | WebhookTargets>({
  ports: portList(Endpoints, WebhookTargets),
  hooks: {
    create: (_p, row, input) =>
      Effect.gen(function*() {
        const settings = yield* Settings
        yield* checkReceiverUrl(row.url, "url", settings.webhookAllowHosts)
        const secret = newSigningSecret()
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
    afterCreate: (_p, row) => announceWebhookChange(row.organization_id, row.id),
    afterUpdate: (_p, _before, after) => announceWebhookChange(after.organization_id, after.id),
    afterRemove: (_p, removed) => announceWebhookChange(removed.organization_id, removed.id),
    afterCommit: (output) => Effect.zipRight(forgetEndpoint(output.id), forgetTargets(output.organization_id)),
    presentAll: (rows) => presentWebhooks(rows)
  }
})

// ---------------------------------------------------------------- deliveries (the outbox's rows, written by `Webhooks/Outbox.ts`)

/** The outbox table (`Webhooks/Tables.ts`), served read-only: its columns are the output's and the lease. */
export const DeliveriesResource = defineResource({
  name: "webhook delivery",
  path: "webhooks/deliveries",
  // Messages on their way, not configuration.
  audited: false,
  table: DeliveriesTable.table,
  indexes: DeliveryIndexes,
  output: WebhookDelivery,
  methods: ["find", "get"],
  ownerField: "organization_id",
  premiumFeature: "webhooks",
  transient: ["attempts"],
  privateFields: { ...DeliveryLeaseFields, ...DeliveryTraceFields },
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
          // What the log keeps to be read by organization and webhook is not part of an attempt's answer.
          attempts: page.data.map(({ organization_id: _o, succeeded: _s, webhook_id: _w, ...a }) => a)
        })
      )
  }
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
}).annotations({
  examples: [{ webhook_id: exampleIds.webhook, from: "2026-01-01T00:00:00.000Z", to: "2026-01-31T23:59:59.999Z" }]
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

// ---------------------------------------------------------------- delivery stats

/**
 * Why the last failed attempt failed: its recorded error, or, when the receiver answered and
 * nothing else went wrong, the status it answered.
 */
const errorOf = (failure: DeliveryStatsRecord["last_failure"]): string | null =>
  failure === null ? null : failure.error ?? (failure.status_code === null ? null : `receiver answered ${failure.status_code}`)

/**
 * The figures of every webhook of one organization, scoped like the delivery log: the
 * organization must be named (`?organization_id=`), be one the principal acts in and have the
 * premium feature `webhooks`; an end user's credential reads none of it.
 */
export const deliveryStats = (principal: Principal, organizationId: string | undefined) =>
  Effect.gen(function*() {
    if (isEndUser(principal)) {
      return yield* Effect.fail(new Forbidden({ message: "Delivery stats are read by the organization's backend" }))
    }
    if (organizationId === undefined) {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid query: name the organization with ?organization_id=",
        errors: { organization_id: "is required" }
      }))
    }
    yield* requireOrganization(principal, organizationId)
    yield* requireExistingOrganization(organizationId)
    yield* requireFeature(DeliveriesResource, principal, organizationId)
    const records = yield* Effect.flatMap(DeliveryStats, (stats) => stats.ofOrganization(organizationId))
    const now = yield* nowMillis
    return records.map((r): WebhookDeliveryStats => ({
      webhook_id: r.webhook_id,
      counts: r.counts,
      // A clock behind the store's (another server's) must not make an age negative.
      oldest_pending_age_s: r.oldest_pending_at === null
        ? null
        : Math.max(0, Math.floor((now - Date.parse(r.oldest_pending_at)) / 1000)),
      last_success_at: r.last_success?.attempted_at ?? null,
      last_failure_at: r.last_failure?.attempted_at ?? null,
      last_error: errorOf(r.last_failure)
    }))
  })

// ---------------------------------------------------------------- declarations

/** The answer of a replay of one webhook's failed messages. */
export const ReplayResult = Schema.Struct({ webhook_id: Schema.String, replayed: Schema.Int })

export const ReplayFailedAction = defineAction({
  place: "webhooks/deliveries",
  name: "replay",
  method: "POST",
  path: "webhooks/deliveries/replay",
  summary: "Queue again every failed message of one webhook created in [from, to], each with a fresh retry schedule",
  auth: "bearer",
  body: { name: "ReplayRange", schema: ReplayRange },
  answers: answers.schema("ReplayResult", ReplayResult),
  status: 200,
  target: (request) => {
    const body = request.body
    const id = typeof body === "object" && body !== null ? (body as Record<string, unknown>).webhook_id : undefined
    return typeof id === "string" ? { def: WebhooksResource, id } : undefined
  },
  queryNamesOrganization: false,
  run: (principal, request) => replayFailed(principal, request.body)
})

export const DeliveryStatsAction = defineAction({
  place: "webhooks/deliveries",
  name: "stats",
  method: "GET",
  path: "webhooks/deliveries/stats",
  summary:
    "Per webhook of the organization: its messages in each status, the age of the oldest pending one, and its last successful and failed attempts",
  auth: "bearer",
  answers: answers.schema("WebhookDeliveryStatsList", DeliveryStatsList),
  status: 200,
  premiumFeature: "webhooks",
  query: "lookUp",
  // Not implied even for a caller of one organization: every caller names it.
  parameters: [{
    name: "organization_id",
    in: "query",
    required: true,
    description: "The organization whose webhooks are summed up: required from every caller (400 without it); " +
      "another organization is 403"
  }],
  run: (principal, request) => deliveryStats(principal, request.at.organizationId)
})

export const ReplayDeliveryAction = defineAction({
  place: "webhooks/deliveries",
  name: "replayOne",
  method: "POST",
  path: "webhooks/deliveries/:id/replay",
  summary: "Queue one failed message again with a fresh retry schedule (409 when it is delivered, pending or delivering)",
  auth: "bearer",
  answers: answers.outputOf(DeliveriesResource),
  status: 200,
  target: (request) => ({ def: DeliveriesResource, id: request.id }),
  queryNamesOrganization: false,
  run: (principal, request) => replayDelivery(principal, request.id)
})
