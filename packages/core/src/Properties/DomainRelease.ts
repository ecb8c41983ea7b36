import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { pageUsages } from "../Domain/Property.js"
import { Storage } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { inList, lt } from "../Engine/Query.js"
import { Settings } from "../Engine/Settings.js"
import { remove } from "../Engine/Writes.js"
import { DomainsResource } from "./Domains.js"

/** How long a page host may stay unproven after its creation before it is released. */
export const PROOF_WINDOW_MS = 7 * 24 * 60 * 60 * 1000

/** Rows looked at per page of a round. */
const PAGE = 100

/**
 * Releases the page hosts (`privacy-center`, `preference-center`) not `ready` within
 * `PROOF_WINDOW_MS` of their creation, so nobody holds a host they cannot prove: each is removed
 * as the operator would remove it (the same hooks, cascades and caches). A domain whose
 * provisioning is under way is left to finish (a removal would be refused anyway); one that
 * cannot be removed now (changed meanwhile, removed by another process) is looked at again next
 * round. Answers how many were released.
 */
export const releaseUnprovenDomains = Effect.gen(function*() {
  const settings = yield* Settings
  const repo = (yield* Storage).repository(DomainsResource.tableDef)
  const cutoff = new Date((yield* Clock.currentTimeMillis) - PROOF_WINDOW_MS).toISOString()
  const releaser: Principal = {
    _tag: "Operator",
    keyId: "domain-release",
    organizationId: settings.operatorOrganizationId,
    via: "in-process"
  }
  let released = 0
  for (;;) {
    const page = yield* Effect.orDie(repo.find({
      where: [inList("usage", pageUsages), inList("status", ["draft", "failed"]), lt("created_at", cutoff)],
      sort: [{ field: "created_at", direction: 1 }],
      limit: PAGE,
      skip: 0,
      count: false
    }))
    let removedNow = 0
    for (const domain of page.data) {
      const gone = yield* remove(DomainsResource, releaser, domain.id).pipe(
        Effect.as(true),
        Effect.catchAll(() => Effect.succeed(false))
      )
      if (!gone) continue
      removedNow++
      yield* Effect.logInfo("page host released: not proven within 7 days of its creation").pipe(
        Effect.annotateLogs({ domain_id: domain.id, organization_id: domain.organization_id })
      )
    }
    released += removedNow
    // A full page with none removed would read the same rows again: the next round retries them.
    if (page.data.length < PAGE || removedNow === 0) return released
  }
})

/**
 * The release running in this process: once at start, then every `everyMs` (default an hour,
 * small against the seven days). Every process of a store may run it: a domain two processes
 * release at once is removed by one, the other's removal finds nothing and moves on.
 */
export const layer = (options: { readonly everyMs?: number | undefined } = {}) =>
  Layer.scopedDiscard(Effect.forkScoped(
    Effect.repeat(
      releaseUnprovenDomains.pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError("page host release failed", cause)
        )
      ),
      Schedule.spaced(options.everyMs ?? 60 * 60 * 1000)
    )
  ))
