import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/**
 * Two API processes on two ports against one PostgreSQL and nothing else: what one writes,
 * the other reads; a token from one works on the other (the signing key lives in the
 * database); optimistic versions hold across processes.
 */
const main = path.join(import.meta.dirname, "..", "src", "main.ts")
const tsx = path.join(import.meta.dirname, "..", "node_modules", ".bin", "tsx")
const children: Array<ChildProcess> = []
let db: TestDatabase
let a: string
let b: string

const start = (url: string, poolSize: number) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(tsx, [main], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        DATABASE_POOL_SIZE: String(poolSize),
        PORT: "0",
        ALLOW_HTTP: "true",
        LOG_LEVEL: "Warning",
        ADMIN_API_KEY: "admin",
        ADMIN_API_SECRET: "admin-secret-0123456789"
      }
    })
    children.push(child)
    let out = ""
    child.stdout.on("data", (d) => {
      out += String(d)
      const m = /"url":"([^"]+)"/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.stderr.on("data", (d) => (out += String(d)))
    child.on("exit", (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })

beforeAll(async () => {
  db = await createTestDatabase({ clients: 2 })
  const pool = db.maxConnections ?? 4
  if (db.kind === "postgres") {
    // Both start at once on an empty database: migrations and bootstrap must not collide.
    ;[a, b] = await Promise.all([start(db.url, pool), start(db.url, pool)])
  } else {
    a = await start(db.url, pool)
    b = await start(db.url, pool)
  }
}, 90_000)

afterAll(async () => {
  for (const c of children) c.kill("SIGTERM")
  await Promise.all(children.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once("exit", resolve)))))
  await db?.close()
})

const json = async (url: string, method: string, body?: unknown, token?: string) => {
  const res = await fetch(url, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {})
    },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() as any }
}

describe(`two servers on one PostgreSQL (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`, () => {
  it("a write through one is visible through the other, with one shared signing key", async () => {
    expect(a).not.toBe(b)
    const session = await json(`${a}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
    expect(session.status).toBe(201)
    const token = session.body.access_token as string

    const created = await json(`${a}/v1/organizations`, "POST", { name: "Written through A" }, token)
    expect(created.status).toBe(201)
    const seen = await json(`${b}/v1/organizations/${created.body.id}`, "GET", undefined, token)
    expect(seen.status).toBe(200)
    expect(seen.body).toEqual(created.body)

    // One operator organization and one admin key, however many servers bootstrapped.
    const keys = await json(`${b}/v1/keys?is_internal=true`, "GET", undefined, token)
    expect(keys.body.total).toBe(1)

    const viaB = await json(`${b}/v1/organizations/${created.body.id}`, "PATCH", { website: "https://b.example", version: 1 }, token)
    expect(viaB.status).toBe(200)
    expect(viaB.body.version).toBe(2)
    const staleViaA = await json(`${a}/v1/organizations/${created.body.id}`, "PATCH", { website: "https://a.example", version: 1 }, token)
    expect(staleViaA.status).toBe(409)
    const final = await json(`${a}/v1/organizations/${created.body.id}`, "GET", undefined, token)
    expect(final.body.website).toBe("https://b.example")
  }, 30_000)
})
