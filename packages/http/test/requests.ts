import { SqliteStore } from "@cmp/store-sqlite"
import { ADMIN } from "@cmp/test-support/http"
import type { ApiRequest, ApiResponse, HttpApi } from "../src/index.js"
import { makeApi } from "./api.js"

/** Plain requests and answers for the suites that drive `handle` directly, as a host would. */

export const request = (method: string, url: string, extra: Partial<ApiRequest> = {}): ApiRequest => ({
  method,
  url,
  headers: {},
  encrypted: false,
  remoteAddress: "127.0.0.1",
  ...extra
})

export const text = (r: ApiResponse) => (typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body))

export const body = (r: ApiResponse) => JSON.parse(text(r))

/** The API over an empty in-memory store with the operator key, delivering nothing. */
export const memoryApi = (): Promise<HttpApi> =>
  makeApi({
    store: SqliteStore.layer({ filename: ":memory:" }),
    hashCost: 1024,
    admin: ADMIN,
    logLevel: "None",
    allowHttp: true,
    dispatcher: false
  })

/** A caller holding a session of an API key: `call(method, url, json?)`. */
export const caller = async (api: HttpApi, key: string, secret: string) => {
  const session = await api.handle(request("POST", "/v1/sessions", {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "api-key", key, secret })
  }))
  if (session.status !== 201) throw new Error(`no session for ${key}: ${text(session)}`)
  const token = body(session).access_token as string
  return (method: string, url: string, json?: unknown, headers: Record<string, string> = {}) =>
    api.handle(request(method, url, {
      headers: {
        authorization: `Bearer ${token}`,
        ...(json === undefined ? {} : { "content-type": "application/json" }),
        ...headers
      },
      ...(json === undefined ? {} : { body: JSON.stringify(json) })
    }))
}

export type Caller = Awaited<ReturnType<typeof caller>>

/** The operator, and a new organization with a client key of its own. */
export const tenants = async (api: HttpApi) => {
  const operator = await caller(api, ADMIN.key, ADMIN.secret)
  const organization = async (name: string) => {
    const org = body(await operator("POST", "/v1/organizations", { name }))
    const key = body(await operator("POST", "/v1/keys", { organization_id: org.id, name: `${name} key`, description: "the client" }))
    return { id: org.id as string, call: await caller(api, key.id, key.secret) }
  }
  return { operator, organization }
}
