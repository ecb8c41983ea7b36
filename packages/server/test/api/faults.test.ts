import { SqliteStore } from "@cmp/store-sqlite"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { expectError, operatorOf } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * A database that cannot be written (read-only, full) answers 503 with the reason and a
 * Retry-After, reads keep working, nothing is half-written, and writes work again once the
 * database does. The faults are made on the server's own SQLite connection.
 */

const { server } = useServer({ store: SqliteStore.layer({ filename: ":memory:" }) }, { operator: false })

const onServerDb = <A>(statement: string) =>
  server.api.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A & object>(statement)) as unknown as Effect.Effect<ReadonlyArray<A>>
  )

describe("database faults (SQLite)", () => {
  it("read-only: 503 naming the reason, reads still work, writes resume afterwards", async () => {
    const op = await operatorOf(server.url)
    const before = await op.call("GET", "/v1/organizations")
    await onServerDb("PRAGMA query_only = 1")
    const refused = await op.call("POST", "/v1/organizations", { body: { name: "while-read-only" } })
    expectError(refused, 503, "Unavailable", "unavailable")
    expect(refused.body.message).toMatch(/read-only/)
    expect(refused.headers.get("retry-after")).toBe("5")
    const read = await op.call("GET", "/v1/organizations")
    expect(read.status).toBe(200)
    expect(read.body.total).toBe(before.body.total)
    await onServerDb("PRAGMA query_only = 0")
    const ok = await op.call("POST", "/v1/organizations", { body: { name: "after-read-only" } })
    expect(ok.status, ok.text).toBe(201)
    // The refused create left nothing behind: not the organization, nor its quota rows.
    const names = (await op.call("GET", "/v1/organizations?$limit=1000")).body.data.map((o: { name: string }) => o.name)
    expect(names).not.toContain("while-read-only")
    expect((await op.call("GET", `/v1/quotas?organization_id=${ok.body.id}`)).body.total).toBe(1)
  })

  it("full: 503 naming the reason, the database stays consistent, and it recovers", async () => {
    const op = await operatorOf(server.url)
    const [{ page_count }] = await onServerDb<{ page_count: number }>("PRAGMA page_count")
    await onServerDb(`PRAGMA max_page_count = ${page_count}`)
    let refused
    // Fill the last free pages, then the next create cannot fit.
    for (let i = 0; i < 200; i++) {
      refused = await op.call("POST", "/v1/organizations", { body: { name: `filler-${i}-${"x".repeat(200)}` } })
      if (refused.status !== 201) break
    }
    expectError(refused!, 503, "Unavailable", "unavailable")
    expect(refused!.body.message).toMatch(/full/)
    await onServerDb("PRAGMA max_page_count = 1073741823")
    const [{ integrity_check }] = await onServerDb<{ integrity_check: string }>("PRAGMA integrity_check")
    expect(integrity_check).toBe("ok")
    expect((await op.call("POST", "/v1/organizations", { body: { name: "after-full" } })).status).toBe(201)
  })
})
