import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as TestClock from "effect/TestClock"
import { type ClientCredentials, makeTokenCache, TokenError } from "../src/OAuth.js"
import { oauthServer } from "./OAuthServer.js"

const config = { timeoutMs: 2000, allowHosts: ["127.0.0.1"] }

describe("OAuth token cache (against oauth2-mock-server)", () => {
  it.scoped("fetches once with client credentials and reuses the token", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const auth: ClientCredentials = {
        token_url: server.tokenUrl,
        client_id: "client-1",
        client_secret: "s3cret:with&odd=chars",
        scope: "webhooks.write",
        audience: "https://receiver.example"
      }
      const cache = yield* makeTokenCache(config)
      const a = yield* cache.get(auth)
      const b = yield* cache.get(auth)
      assert.strictEqual(a, b)
      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual(server.requests[0]!.accessToken, a)
      const req = server.requests[0]!
      assert.deepStrictEqual(req.body, {
        grant_type: "client_credentials",
        scope: "webhooks.write",
        audience: "https://receiver.example"
      })
      // HTTP Basic with form-encoded id and secret (RFC 6749 2.3.1).
      const decoded = Buffer.from(req.authorization!.replace(/^Basic /, ""), "base64").toString()
      assert.strictEqual(decoded, "client-1:s3cret%3Awith%26odd%3Dchars")
      assert.strictEqual(req.contentType, "application/x-www-form-urlencoded")
    }))

  it.scoped("refreshes 60 s before expires_in runs out (driven by the test clock)", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const auth: ClientCredentials = { token_url: server.tokenUrl, client_id: "c", client_secret: "s" }
      const cache = yield* makeTokenCache(config)
      const first = yield* cache.get(auth) // the mock answers expires_in 3600
      yield* TestClock.adjust("3539 seconds")
      assert.strictEqual(yield* cache.get(auth), first)
      assert.strictEqual(server.requests.length, 1)
      yield* TestClock.adjust("1 second")
      const second = yield* cache.get(auth)
      assert.notStrictEqual(second, first)
      assert.strictEqual(server.requests.length, 2)
      assert.strictEqual(yield* cache.get(auth), second)
      assert.strictEqual(server.requests.length, 2)
    }))

  it.scoped("no expires_in means one hour; a huge one is capped at 24 h; a short one at least 60 s early", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const auth: ClientCredentials = { token_url: server.tokenUrl, client_id: "c", client_secret: "s" }
      const cache = yield* makeTokenCache(config)

      server.expiresIn = undefined
      yield* cache.get(auth)
      yield* TestClock.adjust("3539 seconds")
      yield* cache.get(auth)
      assert.strictEqual(server.requests.length, 1)
      yield* TestClock.adjust("1 second")
      server.expiresIn = 10 * 86400
      yield* cache.get(auth)
      assert.strictEqual(server.requests.length, 2)
      yield* TestClock.adjust(`${86400 - 61} seconds`)
      yield* cache.get(auth)
      assert.strictEqual(server.requests.length, 2)
      yield* TestClock.adjust("1 second")
      server.expiresIn = 30
      yield* cache.get(auth)
      assert.strictEqual(server.requests.length, 3)
      // A 30 s token is inside the 60 s margin: used once, asked for again next time.
      yield* cache.get(auth)
      assert.strictEqual(server.requests.length, 4)
    }))

  it.scoped("invalidate forces a new token; a stale invalidation keeps the fresh one", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const auth: ClientCredentials = { token_url: server.tokenUrl, client_id: "c", client_secret: "s" }
      const cache = yield* makeTokenCache(config)
      const first = yield* cache.get(auth)
      yield* cache.invalidate(auth)
      const second = yield* cache.get(auth)
      assert.notStrictEqual(second, first)
      assert.strictEqual(server.requests.length, 2)
      yield* cache.invalidate(auth, first) // someone else's 401 on the old token
      assert.strictEqual(yield* cache.get(auth), second)
      assert.strictEqual(server.requests.length, 2)
      yield* cache.invalidate(auth, second)
      yield* cache.get(auth)
      assert.strictEqual(server.requests.length, 3)
    }))

  it.scoped("one token per (token_url, client_id, scope, audience); concurrent callers share one request", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const auth: ClientCredentials = { token_url: server.tokenUrl, client_id: "c", client_secret: "s" }
      const cache = yield* makeTokenCache(config)
      const tokens = yield* Effect.all(Array.from({ length: 10 }, () => cache.get(auth)), { concurrency: "unbounded" })
      assert.strictEqual(new Set(tokens).size, 1)
      assert.strictEqual(server.requests.length, 1)
      yield* cache.get({ ...auth, scope: "other" })
      yield* cache.get({ ...auth, audience: "other" })
      yield* cache.get({ ...auth, client_id: "c2" })
      assert.strictEqual(server.requests.length, 4)
    }))

  it.scoped("errors of the token endpoint are TokenErrors and are not cached", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const auth: ClientCredentials = { token_url: server.tokenUrl, client_id: "c", client_secret: "s" }
      const cache = yield* makeTokenCache(config)
      server.failNext = { status: 401, body: { error: "invalid_client" } }
      const exit = yield* Effect.exit(cache.get(auth))
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(Effect.suspend(() => {
        server.failNext = { status: 200, body: { token_type: "Bearer" } }
        return cache.get(auth)
      }))
      assert.instanceOf(error, TokenError)
      assert.strictEqual(error.message, "token response has no usable access_token")
      const ok = yield* cache.get(auth)
      assert.isString(ok)
      assert.strictEqual(server.requests.length, 3)
    }))

  it.scoped("token requests follow the SSRF rules of the Sender", () =>
    Effect.gen(function*() {
      const server = yield* oauthServer
      const cache = yield* makeTokenCache({ timeoutMs: 2000, allowHosts: [] })
      const error = yield* Effect.flip(cache.get({ token_url: server.tokenUrl, client_id: "c", client_secret: "s" }))
      assert.deepStrictEqual([error.status, error.message], [
        null,
        "token request failed: refused: 127.0.0.1 is a private/loopback/link-local address"
      ])
      assert.strictEqual(server.requests.length, 0)
    }))
})
