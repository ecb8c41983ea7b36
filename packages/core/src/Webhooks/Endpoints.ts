import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso, nowMillis } from "../Engine/Clock.js"
import { ChangeFeed } from "../Engine/ChangeFeed.js"
import { Storage } from "../Engine/Ports.js"
import { overlapRuns, WebhooksResource } from "./Webhooks.js"
import { type Endpoint, Endpoints } from "./Ports.js"
import { SecretBox } from "../Engine/Secrets.js"
import { WebhookTargets } from "./Targets.js"
import { announceWebhookChange } from "./Changes.js"

/**
 * The dispatcher reads a webhook (and opens its sealed secrets) for every message; a copy is kept
 * for a second. A change through this process drops it at once (`forgetEndpoint` after the
 * commit); one made through another server process as soon as its news arrives where the store
 * carries it (`forgetOtherWebhookChanges`), and within `ENDPOINT_TTL_MS` in any case.
 */
const ENDPOINT_TTL_MS = 1000

export const EndpointsLive = Effect.gen(function*() {
  const storage = yield* Storage
  const box = yield* SecretBox
  const targets = yield* WebhookTargets
  const feed = yield* ChangeFeed
  const repo = storage.repository(WebhooksResource.tableDef)
  const kept = new Map<string, { readonly endpoint: Option.Option<Endpoint>; readonly until: number }>()
  const load = (id: string) =>
    Effect.gen(function*() {
      const row = yield* repo.get(id)
      if (Option.isNone(row)) return Option.none<Endpoint>()
      const w = row.value
      const auth = w.auth
      // Read with the row, so no message costs a second read; opened only while the overlap runs.
      const previous = overlapRuns(w, yield* nowMillis)
        ? { secret: yield* box.open(w.previous_secret_sealed), expiresAtMs: Date.parse(w.previous_secret_expires_at) }
        : null
      return Option.some<Endpoint>({
        id: w.id,
        organization_id: w.organization_id,
        url: w.url,
        enabled: w.enabled === true,
        signingSecret: yield* box.open(w.signing_secret_sealed),
        previousSigningSecret: previous,
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
  // Counts the changes heard: a read that began before one (it may hold the row as it was
  // before a rotation) answers its own message but is not kept for the next ones.
  let changes = 0
  const forget = (id: string) =>
    Effect.sync(() => {
      changes++
      kept.delete(id)
    })
  return Endpoints.of({
    get: (id) =>
      Effect.suspend(() => {
        const now = Date.now()
        const hit = kept.get(id)
        if (hit && hit.until > now) return Effect.succeed(hit.endpoint)
        const heard = changes
        return Effect.tap(load(id), (endpoint) => {
          if (heard !== changes) return
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
          if (done) {
            yield* targets.forget(row.value.organization_id)
            return yield* Effect.provideService(announceWebhookChange(row.value.organization_id, id), ChangeFeed, feed)
          }
        }
      }).pipe(Effect.ensuring(forget(id)))
  })
})
