import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowSeconds } from "../Engine/Clock.js"
import { CredentialCache, forgetCredential } from "./CredentialCache.js"
import { ConsentTokenStates, forgetTokenIssuer } from "./TokenStates.js"
import { answers, defineAction } from "../Engine/Action.js"
import {
  PlatformIntegration,
  PlatformIntegrationCreate,
  PlatformIntegrationSession,
  PlatformIntegrationSessionInput,
  PlatformIntegrationUpdate
} from "../Domain/Account.js"
import { InvalidInput } from "../Domain/Errors.js"
import { addressKeys, throttled } from "./LoginThrottle.js"
import { SecretHasher, Storage, TokenIssuer } from "../Engine/Ports.js"
import { randomToken } from "../Engine/Random.js"
import { defineResource, portList } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { Settings } from "../Engine/Settings.js"

/** The operator's registry of platform integrations; the token is shown once and kept hashed. */
export const PlatformIntegrationsResource = defineResource({
  name: "platform integration",
  path: "platform-integrations",
  table: "platform_integrations",
  indexes: [],
  output: PlatformIntegration,
  createInput: PlatformIntegrationCreate,
  updateInput: PlatformIntegrationUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  operatorOnly: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["token"],
  revealsCredentials: "create",
  privateFields: { token_hash: field.string },
  defaults: { enabled: true },
  ports: portList<CredentialCache | ConsentTokenStates>(CredentialCache, ConsentTokenStates),
  hooks: {
    // A deleted integration's sessions end now in this process, not when its cached entry ages.
    afterCommit: (output) => Effect.zipRight(forgetCredential("platform_integrations", output.id), forgetTokenIssuer(output.id)),
    create: (_p, row) =>
      Effect.gen(function*() {
        const token = `pit_${row.id}.${randomToken(32)}`
        const token_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(token))
        return { row: { ...row, token_hash }, reveal: { token } }
      })
  }
})

const invalidToken = () =>
  new InvalidInput({
    message: "Invalid platform integration token",
    errors: { "x-platform-authorization": "is not a valid platform integration token" }
  })

const emptyBody = (body: unknown) =>
  body !== undefined && body !== null && (typeof body !== "object" || Array.isArray(body) || Object.keys(body).length > 0)
    ? Effect.fail(new InvalidInput({ message: "The body must be an empty object", errors: { body: "must be an empty object" } }))
    : Effect.void

/**
 * `POST /v1/platform-integrations/sessions`: the integration's token (header
 * `x-platform-authorization`) buys an access token acting as a client of its organization. The
 * token is checked first, and the body (which must be empty) only then: an unknown caller's
 * body is never read.
 */
export const admitPlatformIntegration = (token: string | undefined, clientAddress?: string) =>
  Effect.gen(function*() {
    const given = token?.trim() ?? ""
    const m = /^pit_([^.]+)\.(.+)$/.exec(given)
    // Guessing tokens is slowed like failed logins: per integration and per client address.
    const keys = [...(m ? [`pit:${m[1]}`] : []), ...addressKeys("integration", clientAddress)]
    const integration = yield* throttled(keys, authenticateIntegration(m ? m[1]! : undefined, given))
    return (body: unknown) => Effect.zipRight(emptyBody(body), integrationSession(integration))
  })

export const createPlatformIntegrationSession = (token: string | undefined, body: unknown, clientAddress?: string) =>
  Effect.flatMap(admitPlatformIntegration(token, clientAddress), (session) => session(body))

const authenticateIntegration = (integrationId: string | undefined, token: string) =>
  Effect.gen(function*() {
    const hasher = yield* SecretHasher
    const found = integrationId !== undefined
      ? yield* (yield* Storage).repository(PlatformIntegrationsResource.tableDef).get(integrationId)
      : Option.none()
    if (Option.isNone(found)) {
      yield* hasher.hash(token)
      return yield* Effect.fail(invalidToken())
    }
    const integration = found.value
    if (!(yield* hasher.verify(token, integration.token_hash)) || integration.enabled !== true) {
      return yield* Effect.fail(invalidToken())
    }
    return integration
  })

const integrationSession = (integration: { readonly id: string; readonly organization_id: string }) =>
  Effect.gen(function*() {
    const settings = yield* Settings
    const iat = yield* nowSeconds
    const access_token = yield* (yield* TokenIssuer).issue({
      sub: integration.id,
      // Its own kind, so verifying a token knows which credential to look for.
      kind: "integration",
      org: integration.organization_id,
      iat,
      exp: iat + settings.tokenTtlSeconds
    })
    return {
      type: "api-key",
      key: integration.id,
      access_token,
      platform_integration_id: integration.id
    } satisfies PlatformIntegrationSession
  })

// The integration's own token (`x-platform-authorization`) is the credential.
export const PlatformIntegrationSessionAction = defineAction({
  place: "platform-integrations/sessions",
  name: "create",
  method: "POST",
  path: "platform-integrations/sessions",
  tag: "platform-integrations",
  summary: "Open a session for a platform integration: its token in `x-platform-authorization`, an empty body; " +
    "the access token acts as a client of the integration's organization",
  auth: "none",
  credentialHeader: "x-platform-authorization",
  body: { name: "PlatformIntegrationSessionInput", schema: PlatformIntegrationSessionInput },
  bodyOptional: true,
  answers: answers.schema("PlatformIntegrationSession", PlatformIntegrationSession),
  status: 201,
  revealsCredentials: true,
  admit: (request) => admitPlatformIntegration(request.credential, request.address),
  run: (_principal, request) => createPlatformIntegrationSession(request.credential, request.body, request.address)
})
