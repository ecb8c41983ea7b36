import { type LogVerification, verifyLog } from "@cmp/core"
import { DigestsLive } from "@cmp/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StoreLayer } from "./Options.js"

/**
 * Verifies one organization's consent log on a store, without the platform (no bootstrap, no
 * dispatcher, nothing written): what an auditor's command or a host's own check runs. The same
 * answer as `GET /v1/consents/log/verify`.
 */
export const verifyConsentLog = (store: StoreLayer, organizationId: string): Effect.Effect<LogVerification, unknown> =>
  Effect.provide(verifyLog(organizationId), Layer.merge(store, DigestsLive))
