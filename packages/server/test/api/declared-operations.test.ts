import { type AnsweredOperation, answers, defineAction, SecretsResource } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { beforeAll, describe, expect, it } from "vitest"
import { call, expect401, expectError } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * What the HTTP layer does for an operation beyond running it comes from the operation's
 * declaration: which end users' credentials it takes, whether it counts against `api_requests`,
 * what it adds to the metrics, and the count quota it checks first. The operations here exist
 * only in this file and are handed to the server as a host's own.
 */

const Caller = Schema.Struct({ principal: Schema.String })
const callerOf = (principal: { readonly _tag: string }) => Effect.succeed({ principal: principal._tag })

/** What the public operation's metric heard, in order. */
const heard: Array<AnsweredOperation> = []

/** A second operation a visitor's page may call with the organization's public key. */
const PublicPingAction = defineAction({
  place: "team-pings",
  name: "fromPage",
  method: "POST",
  path: "team-pings/from-page",
  summary: "A ping a visitor's page sends with the public key",
  auth: "bearer",
  endUsers: { credentials: ["public-key"] },
  answers: answers.schema("TeamPingCaller", Caller),
  status: 200,
  metric: (_metrics, answered) => Effect.sync(() => heard.push(answered)),
  run: (principal) => callerOf(principal)
})

/** A second service outside `api_requests`. */
const FreePingAction = defineAction({
  place: "team-pings",
  name: "free",
  method: "GET",
  path: "team-pings/free",
  summary: "A ping not counted against api_requests",
  auth: "bearer",
  answers: answers.schema("TeamPingCaller", Caller),
  status: 200,
  countsApiRequests: false,
  run: (principal) => callerOf(principal)
})

/** The same ping, counted as any request is unless declared otherwise. */
const CountedPingAction = defineAction({
  place: "team-pings",
  name: "counted",
  method: "GET",
  path: "team-pings/counted",
  summary: "A ping counted against api_requests",
  auth: "bearer",
  answers: answers.schema("TeamPingCaller", Caller),
  status: 200,
  run: (principal) => callerOf(principal)
})

/** An action allowed while its organization holds fewer secrets than its `secrets` quota. */
const SecretsGateAction = defineAction({
  place: "team-pings",
  name: "underSecrets",
  method: "POST",
  path: "team-pings/under-secrets",
  summary: "A ping refused once the organization's secrets reach their quota",
  auth: "bearer",
  body: { name: "TeamPingInput", schema: Schema.Struct({ organization_id: Schema.String }) },
  answers: answers.schema("TeamPingCaller", Caller),
  status: 201,
  queryNamesOrganization: false,
  quota: { name: "secrets", counts: SecretsResource },
  run: (principal) => callerOf(principal)
})

// An open action is handed no principal, which its use-case cannot mistake for one.
defineAction({
  place: "team-pings",
  name: "open",
  method: "POST",
  path: "team-pings/open",
  summary: "Typed only",
  auth: "none",
  answers: answers.schema("TeamPingCaller", Caller),
  status: 200,
  // @ts-expect-error an open action's use-case has no principal to read
  run: (principal) => callerOf(principal)
})

const { server, op, tenants: [t, u] } = useServer(
  { actions: [PublicPingAction, FreePingAction, CountedPingAction, SecretsGateAction] },
  { tenants: 2 }
)

beforeAll(async () => {
  // Set before the tenant's first request: the usage counter caches the limit for a few seconds.
  const quota = await op.quotaOf(u.org.id)
  expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: 2, secrets: 1 } })).status).toBe(200)
})

const withPublicKey = (key: string, extra: Record<string, string> = {}) => ({ headers: { "x-public-api-key": key, ...extra } })

describe("an operation's declaration drives the HTTP layer", () => {
  it("a second public operation takes the public key, answers its preflight, and records the metric it names", async () => {
    heard.length = 0
    const r = await call(server.url, "POST", "/v1/team-pings/from-page", withPublicKey(t.org.public_api_key))
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({ principal: "PublicKey" })
    expect(await t.call("POST", "/v1/team-pings/from-page").then((a) => a.body)).toEqual({ principal: "Client" })
    const preflight = await call(server.url, "OPTIONS", "/v1/team-pings/from-page", { headers: { origin: "https://shop.example" } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS")
    expect401(await call(server.url, "POST", "/v1/team-pings/from-page", { token: "not-a-token" }))
    expect(heard).toEqual([{ status: 200, principal: "PublicKey" }, { status: 200, principal: "Client" }, { status: 401 }])

    // Elsewhere the public key is still told where it is taken, as the registry declares it.
    const elsewhere = await call(server.url, "GET", "/v1/team-pings/counted", withPublicKey(t.org.public_api_key))
    expect401(elsewhere)
    expect(elsewhere.body.message).toBe(
      "A public key only records consent events (POST /v1/consents/events): other requests need an access token"
    )
    // Its document names the public key beside the bearer.
    const document = (await call(server.url, "GET", "/openapi.json")).body
    expect(document.paths["/v1/team-pings/from-page"].post.security).toEqual([{ bearer: [] }, { publicApiKey: [] }, { publicApiKeyQuery: [] }])
    expect(document.paths["/v1/team-pings/free"].get.security).toEqual([{ bearer: [] }])
  })

  it("a service declared outside api_requests is never counted; an undeclared one is", async () => {
    for (let i = 0; i < 4; i++) expect((await u.call("GET", "/v1/team-pings/free")).status).toBe(200)
    expect((await u.call("GET", "/v1/team-pings/counted")).status).toBe(200)
    expect((await u.call("GET", "/v1/team-pings/counted")).status).toBe(200)
    expectError(await u.call("GET", "/v1/team-pings/counted"), 429, "TooManyRequests", "too-many-requests")
    expect((await u.call("GET", "/v1/team-pings/free")).status).toBe(200)
  })

  it("an action's quota is checked before it runs: allowed under the limit, refused at it as a resource's create is", async () => {
    const asT = t.call
    const quota = await op.quotaOf(t.org.id)
    expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 1 } })).status).toBe(200)
    const gate = () => asT("POST", "/v1/team-pings/under-secrets", { body: { organization_id: t.org.id } })
    const allowed = await gate()
    expect(allowed.status, allowed.text).toBe(201)
    expect(allowed.body).toEqual({ principal: "Client" })
    expect((await asT("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: "signing" } })).status).toBe(201)

    const refused = await gate()
    expectError(refused, 403, "Forbidden", "forbidden")
    const secondSecret = await asT("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: "signing" } })
    expect(refused.body).toEqual(secondSecret.body)
    expect(refused.body.errors).toEqual({ secrets: "limit of 1 reached" })

    // Another organization is counted apart, and one the caller is not in is refused before any count.
    expect((await op.call("POST", "/v1/team-pings/under-secrets", { body: { organization_id: u.org.id } })).status).toBe(201)
    const outsider = await asT("POST", "/v1/team-pings/under-secrets", { body: { organization_id: u.org.id } })
    expectError(outsider, 403, "Forbidden", "forbidden")
    expect(outsider.body.message).toBe("You are not allowed to act in this organization")
  })
})
