import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import type { StoreLayer } from "@cmp/platform"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError, start, storeKind, type TestServer } from "./helpers.js"

/**
 * `/readyz` when the database stops answering, and again once it is back. On PostgreSQL the
 * server reaches its database through a TCP proxy of the test's own, which the test closes (every
 * connection cut, new ones refused), then opens again. On SQLite, which has no server to stop and
 * whose file stays open however it is moved or locked (in WAL mode readers are never blocked),
 * another connection takes the migrations' record away, as a file swapped for one that was
 * never migrated would, then puts it back.
 */

const METRICS_TOKEN = "metrics-token-0123456789abcdef"

interface Outage {
  /** The store layer the server runs on. */
  readonly layer: StoreLayer
  readonly stop: () => Promise<void>
  readonly resume: () => Promise<void>
  readonly close: () => Promise<void>
}

/** A TCP proxy to `target` that can be cut and restored on the same port. */
const proxyTo = async (target: URL) => {
  const sockets = new Set<net.Socket>()
  const make = () =>
    net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on("close", () => sockets.delete(s))
        s.on("error", () => s.destroy())
      }
      client.pipe(upstream).pipe(client)
    })
  const listen = (server: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
    })
  let server = make()
  const port = await listen(server, 0)
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve()
      server.close(() => resolve())
      for (const s of sockets) s.destroy()
    })
  return {
    port,
    stop,
    resume: async () => {
      if (server.listening) return
      server = make()
      await listen(server, port)
    },
    close: stop
  }
}

const postgresOutage = async (): Promise<Outage> => {
  const db = await createTestDatabase()
  const url = new URL(db.url)
  const proxy = await proxyTo(url)
  const proxied = new URL(db.url)
  proxied.hostname = "127.0.0.1"
  proxied.port = String(proxy.port)
  return {
    layer: PgStore.layer({ url: proxied.toString(), maxConnections: db.maxConnections }),
    stop: proxy.stop,
    resume: proxy.resume,
    close: async () => {
      await proxy.close()
      await db.close()
    }
  }
}

/** The store's own driver, as another process on the same file would open it. */
const Database = createRequire(import.meta.url)("better-sqlite3") as new (filename: string) => {
  exec: (sql: string) => void
  prepare: (sql: string) => { get: () => unknown }
  close: () => void
}

const sqliteOutage = async (): Promise<Outage> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-readiness-"))
  const file = path.join(dir, "consent.db")
  const other = () => new Database(file)
  return {
    layer: SqliteStore.layer({ filename: file }),
    stop: async () => {
      const db = other()
      db.exec("ALTER TABLE effect_sql_migrations RENAME TO effect_sql_migrations_away")
      db.close()
    },
    resume: async () => {
      const db = other()
      const away = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'effect_sql_migrations_away'").get()
      if (away) db.exec("ALTER TABLE effect_sql_migrations_away RENAME TO effect_sql_migrations")
      db.close()
    },
    close: async () => {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

describe(`/readyz when the database stops answering (${storeKind})`, () => {
  let outage: Outage
  let server: TestServer
  beforeAll(async () => {
    outage = storeKind === "postgres" ? await postgresOutage() : await sqliteOutage()
    server = await start({ store: outage.layer, metricsToken: METRICS_TOKEN })
  }, 60_000)
  afterAll(async () => {
    await outage?.resume()
    await server?.close()
    await outage?.close()
  }, 60_000)

  it("is 503 with the reason, while /healthz stays 200; ready again once the database is back", async () => {
    expect((await call(server.url, "GET", "/readyz")).status).toBe(200)

    await outage.stop()
    const started = Date.now()
    const r = await call(server.url, "GET", "/readyz")
    expectError(r, 503, "Unavailable", "unavailable")
    expect(r.body.message).toMatch(/^Not ready: the database/)
    expect(r.headers.get("retry-after")).toBe("5")
    // Answered within the ping's own second, not at a client's or a driver's timeout.
    expect(Date.now() - started).toBeLessThan(3_000)
    expect((await call(server.url, "GET", "/healthz")).status).toBe(200)
    // The scrape still answers, its store gauges as last read.
    expect((await call(server.url, "GET", "/metrics", { token: METRICS_TOKEN })).status).toBe(200)

    await outage.resume()
    await expect.poll(async () => (await call(server.url, "GET", "/readyz")).status, { timeout: 10_000, interval: 100 }).toBe(200)
  }, 60_000)
})
