import * as http from "node:http"
import { describe, expect, it } from "vitest"
import { call, expect400, expect401, expect404, expect405, expectError, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

const { server, tenants: [t] } = useServer({}, { tenants: 1 })
const asT = t.call

/** A raw HTTP request, for headers fetch will not send (Host). */
const raw = (url: string, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request(url + path, { method: "GET", headers }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (c) => (body += c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on("error", reject)
    req.end()
  })

describe("HTTPS enforcement", () => {
  // Plain HTTP cannot sign the operator in on these.
  const { server: strict } = useServer({ allowHttp: false }, { operator: false })
  const { server: proxied } = useServer({ allowHttp: false, trustProxy: true }, { operator: false })

  it("plain HTTP is 301 to the https URL of the same path and query", async () => {
    const host = new URL(strict.url).host
    const r = await call(strict.url, "GET", "/v1/keys?name=a&$limit=2")
    expect(r.status).toBe(301)
    expect(r.headers.get("location")).toBe(`https://${host}/v1/keys?name=a&$limit=2`)
    // The body says why and what to do, in the contract's error shape: a curl without -L shows it.
    expect(r.body).toEqual({
      name: "MovedPermanently",
      message: `This API is served over HTTPS only: use https://${host}/v1/keys?name=a&$limit=2. ` +
        "For local development over plain HTTP, start the server with ALLOW_HTTP=true (allowHttp: true when embedding it).",
      code: 301,
      className: "moved-permanently",
      errors: {}
    })
    const post = await call(strict.url, "POST", "/v1/sessions", { body: { type: "api-key", key: "k", secret: "s" } })
    expect(post.status).toBe(301)
    expect(post.headers.get("location")).toBe(`https://${host}/v1/sessions`)
  })

  it("the redirect uses the Host header the client sent", async () => {
    const r = await raw(strict.url, "/v1/organizations?x=1", { host: "api.example.com" })
    expect(r.status).toBe(301)
    expect(r.headers.location).toBe("https://api.example.com/v1/organizations?x=1")
  })

  it("a Host header that is not a host name is not reflected into the redirect", async () => {
    const r = await raw(strict.url, "/v1/keys", { host: "evil.example/@other" })
    expect(r.status).not.toBe(301)
    expect(r.headers.location).toBeUndefined()
  })

  it("X-Forwarded-Proto is ignored unless the proxy is trusted", async () => {
    const r = await call(strict.url, "GET", "/v1/keys", { headers: { "x-forwarded-proto": "https" } })
    expect(r.status).toBe(301)
  })

  it("behind a trusted proxy, X-Forwarded-Proto https is served (401 without a token)", async () => {
    const r = await call(proxied.url, "GET", "/v1/keys", { headers: { "x-forwarded-proto": "https" } })
    expect401(r)
    const plain = await call(proxied.url, "GET", "/v1/keys", { headers: { "x-forwarded-proto": "http" } })
    expect(plain.status).toBe(301)
    const none = await call(proxied.url, "GET", "/v1/keys")
    expect(none.status).toBe(301)
  })

  it("behind a trusted proxy a whole session works", async () => {
    const headers = { "x-forwarded-proto": "https" }
    const s = await call(proxied.url, "POST", "/v1/sessions", {
      headers,
      body: { type: "api-key", key: "admin", secret: "admin-secret-0123456789" }
    })
    expect(s.status).toBe(201)
    const r = await call(proxied.url, "GET", "/v1/organizations", { headers, token: s.body.access_token })
    expect(r.status).toBe(200)
  })
})

describe("bad input", () => {
  const postKey = (rawBody: string, headers: Record<string, string> = {}) =>
    call(server.url, "POST", "/v1/keys", { token: t.token, rawBody, headers })

  it("malformed JSON is 400 BadRequest, not 500", async () => {
    for (const body of ["{", "{\"name\": }", "not json", "{'a': 1}", "\u0000"]) {
      const r = await postKey(body)
      expect400(r)
    }
    const session = await call(server.url, "POST", "/v1/sessions", { rawBody: "{\"type\":" })
    expect400(session)
  })

  it("a body over 1 MiB is 413 PayloadTooLarge", async () => {
    const big = JSON.stringify({ organization_id: t.org.id, name: "big", description: "x".repeat(1024 * 1024 + 10) })
    const r = await postKey(big)
    expectError(r, 413, "PayloadTooLarge", "payload-too-large")
    const session = await call(server.url, "POST", "/v1/sessions", {
      body: { type: "api-key", key: "k", secret: "s".repeat(1024 * 1024 + 10) }
    })
    expectError(session, 413, "PayloadTooLarge", "payload-too-large")
  })

  it("a body just under 1 MiB is parsed (and then validated)", async () => {
    const body = JSON.stringify({ organization_id: t.org.id, name: "big", description: "x".repeat(1024 * 1024 - 200) })
    const r = await postKey(body)
    expect400(r)
    expect(r.body.errors).toHaveProperty("description")
  })

  it("a JSON array, string, number or null body is 400", async () => {
    for (const body of ["[]", "[{\"name\":\"a\"}]", "\"text\"", "42", "null", "true"]) {
      const r = await postKey(body)
      expect400(r)
    }
    const patch = await call(server.url, "PATCH", `/v1/keys/${t.key.id}`, { token: t.token, rawBody: "[1,2]" })
    expect400(patch)
    const session = await call(server.url, "POST", "/v1/sessions", { rawBody: "[]" })
    expect400(session)
  })

  it("a body of JSON null, or another value that is not an object, is 400 saying so, not 'invalid JSON'", async () => {
    for (const [body, kind] of [["null", "null"], ["42", "number"], ["\"text\"", "string"], [" true ", "boolean"]]) {
      const r = await postKey(body!)
      expect400(r)
      expect(r.body.message).toBe(`The request body must be a JSON object, not ${kind}`)
      expect(r.body.errors).toEqual({ body: `must be a JSON object, not ${kind}` })
    }
    const invalid = await postKey("{\"name\": }")
    expect(invalid.body.message).toBe("The request body is not valid JSON")
  })

  it("a 415 names the content type received and the one expected", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]) {
      const r = await postKey(JSON.stringify({ organization_id: t.org.id, name: "x" }), { "content-type": `${type}; charset=utf-8` })
      expectError(r, 415, "UnsupportedMediaType", "unsupported-media-type")
      expect(r.body.message).toBe(`Unsupported media type: received a ${type} body, expected application/json`)
      expect(r.body.errors).toEqual({ "content-type": `must be application/json, not ${type}` })
    }
  })

  it("an empty body is 400", async () => {
    expect400(await postKey(""))
    expect400(await call(server.url, "POST", "/v1/sessions"))
  })

  it("a body of another media type than JSON is 415 and nothing is created", async () => {
    const name = unique("form")
    for (
      const [type, body] of [
        ["text/plain", JSON.stringify({ organization_id: t.org.id, name })],
        ["application/x-www-form-urlencoded", `organization_id=${t.org.id}&name=${name}`],
        ["multipart/form-data; boundary=x", `--x\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n--x--`]
      ]
    ) {
      const r = await postKey(body, { "content-type": type })
      expectError(r, 415, "UnsupportedMediaType", "unsupported-media-type")
    }
    expect((await asT("GET", `/v1/keys?name=${name}`)).body.total).toBe(0)
    const session = await call(server.url, "POST", "/v1/sessions", {
      rawBody: "type=api-key&key=admin&secret=admin-secret-0123456789",
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expectError(session, 415, "UnsupportedMediaType", "unsupported-media-type")
    // JSON in another charset or compressed is refused the same way, not misread.
    expectError(await postKey(JSON.stringify({ organization_id: t.org.id, name }), { "content-type": "application/json; charset=latin1" }), 415, "UnsupportedMediaType", "unsupported-media-type")
    expectError(await postKey(JSON.stringify({ organization_id: t.org.id, name }), { "content-encoding": "gzip" }), 415, "UnsupportedMediaType", "unsupported-media-type")
    expect((await asT("GET", `/v1/keys?name=${name}`)).body.total).toBe(0)
  })

  it("deeply nested JSON is 400, not 500", async () => {
    const arrays = "[".repeat(5000) + "]".repeat(5000)
    expect400(await postKey(`{"name": ${arrays}}`))
    expect400(await call(server.url, "POST", "/v1/sessions", { rawBody: `{"type":"api-key","key":${arrays},"secret":"s"}` }))
    const objects = "{\"a\":".repeat(5000) + "1" + "}".repeat(5000)
    expect400(await postKey(`{"description": ${objects}}`))
    expect400(await call(server.url, "PATCH", `/v1/keys/${t.key.id}`, { token: t.token, rawBody: `{"name": ${arrays}}` }))
    // Close to the body limit.
    const half = 500 * 1024
    expect400(await postKey("[".repeat(half) + "]".repeat(half)))
    // Modest nesting is an ordinary validation error.
    const shallow = await postKey(`{"organization_id": "${t.org.id}", "name": [[[["x"]]]]}`)
    expect400(shallow)
    expect(shallow.body.errors).toHaveProperty("name")
    expect((await asT("GET", "/v1/keys")).status).toBe(200)
  })
})

describe("request ids and error bodies", () => {
  it("every response carries X-Request-Id; a sane incoming one is echoed", async () => {
    const ok = await asT("GET", "/v1/keys")
    expect(ok.headers.get("x-request-id")).toMatch(/^[\w.-]+$/)
    const echoed = await asT("GET", "/v1/keys", { headers: { "x-request-id": "trace-123.abc" } })
    expect(echoed.headers.get("x-request-id")).toBe("trace-123.abc")
    const unsafe = await asT("GET", "/v1/keys", { headers: { "x-request-id": "a b<script>" } })
    expect(unsafe.headers.get("x-request-id")).not.toContain("<")
    expect(unsafe.headers.get("x-request-id")).toBeTruthy()
    const ids = new Set<string>()
    for (let i = 0; i < 3; i++) ids.add((await call(server.url, "GET", "/v1/keys")).headers.get("x-request-id")!)
    expect(ids.size).toBe(3)
  })

  it("every error response carries X-Request-Id (400, 401, 404, 405, 413)", async () => {
    const errors = [
      await call(server.url, "POST", "/v1/sessions", { rawBody: "{" }),
      await call(server.url, "GET", "/v1/keys"),
      await asT("GET", "/v1/keys/nope"),
      await asT("DELETE", "/v1/quotas/x"),
      await call(server.url, "POST", "/v1/sessions", { rawBody: JSON.stringify({ a: "x".repeat(1024 * 1024 + 1) }) }),
      await call(server.url, "GET", "/v1/nope"),
      await call(server.url, "GET", "/nope")
    ]
    for (const r of errors) {
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.headers.get("x-request-id"), `${r.status} ${r.text}`).toBeTruthy()
      expect(r.headers.get("content-type")).toMatch(/application\/json/)
    }
  })

  it("an unknown route under /v1 is 404 with the contract body", async () => {
    expect404(await asT("GET", "/v1/nope"))
    expect404(await call(server.url, "GET", "/v1/nope"))
    expect404(await asT("POST", "/v1/keys/x/y", { body: {} }))
    expect404(await call(server.url, "GET", "/v2/keys"))
    // `/` is no API route but the place of a hosted page: a host that serves none answers the 404 page.
    const root = await call(server.url, "GET", "/")
    expect(root.status).toBe(404)
    expect(root.headers.get("content-type")).toBe("text/html; charset=utf-8")
  })

  it("an unsupported method on a known service is 405", async () => {
    expect405(await asT("DELETE", "/v1/quotas/some-id"))
    expect405(await asT("PUT", "/v1/quotas/some-id", { body: {} }))
    expect405(await asT("DELETE", "/v1/quotas"))
    expect405(await asT("POST", "/v1/keys/some-id", { body: {} }))
    expect405(await asT("PATCH", "/v1/keys", { body: {} }))
    expect405(await asT("DELETE", "/v1/premium-features/some-id"))
    expect405(await asT("PUT", "/v1/members/some-id", { body: {} }))
    expect405(await call(server.url, "GET", "/v1/sessions"))
    expect405(await call(server.url, "DELETE", "/v1/sessions"))
  })

  it("a trailing slash reaches the same service", async () => {
    const r = await asT("GET", "/v1/keys/")
    expect(r.status).toBe(200)
    expect(r.body.total).toBeGreaterThan(0)
  })
})

describe("openapi and docs", () => {
  it("GET /openapi.json describes the API", async () => {
    const r = await call(server.url, "GET", "/openapi.json")
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toMatch(/application\/json/)
    expect(r.body.openapi).toBe("3.1.0")
    expect(r.body.info.version).toBe("1.0")
    for (
      const p of [
        "/v1/keys",
        "/v1/keys/{id}",
        "/v1/sessions",
        "/v1/organizations",
        "/v1/organizations/{id}",
        "/v1/quotas",
        "/v1/quotas/{id}",
        "/v1/premium-features",
        "/v1/premium-features/{id}",
        "/v1/secrets",
        "/v1/secrets/{id}",
        "/v1/members",
        "/v1/members/{id}"
      ]
    ) {
      expect(r.body.paths, p).toHaveProperty([p])
    }
    expect(Object.keys(r.body.paths["/v1/sessions"])).toEqual(["post"])
    // The document lists exactly the methods the server serves.
    expect(Object.keys(r.body.paths["/v1/quotas/{id}"]).sort()).toEqual(["get", "patch"])
    expect(Object.keys(r.body.paths["/v1/quotas"]).sort()).toEqual(["get", "post"])
    expect(Object.keys(r.body.paths["/v1/keys/{id}"]).sort()).toEqual(["delete", "get", "patch", "put"])
    expect(Object.keys(r.body.paths["/v1/members/{id}"]).sort()).toEqual(["delete", "get", "patch"])
    expect(Object.keys(r.body.paths["/v1/premium-features/{id}"]).sort()).toEqual(["get", "patch", "put"])
    expect(r.body.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" })
    expect(r.body.components.schemas.Error.properties).toHaveProperty("className")
  })

  it("GET /openapi.json needs no token and is not redirected when HTTP is allowed", async () => {
    const r = await call(server.url, "GET", "/openapi.json", { token: "garbage" })
    expect(r.status).toBe(200)
  })

  it("GET /docs/ serves Swagger UI from the installed package", async () => {
    const page = await call(server.url, "GET", "/docs/")
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toMatch(/text\/html/)
    expect(page.text).toContain("swagger-ui-bundle.js")
    const bundle = await call(server.url, "GET", "/docs/swagger-ui-bundle.js")
    expect(bundle.status).toBe(200)
    expect(bundle.text.length).toBeGreaterThan(10_000)
    const css = await call(server.url, "GET", "/docs/swagger-ui.css")
    expect(css.status).toBe(200)
    const init = await call(server.url, "GET", "/docs/init.js")
    expect(init.status).toBe(200)
    expect(init.text).toContain("openapi.json")
  })

  it("GET /docs redirects to /docs/", async () => {
    const r = await call(server.url, "GET", "/docs")
    expect(r.status).toBe(301)
    expect(r.headers.get("location")).toBe("/docs/")
  })
})
