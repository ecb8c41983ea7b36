import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import pg from "pg"

/**
 * A PostgreSQL database of its own for a test: a fresh database on the server named by
 * `DATABASE_URL` (dropped by `close`), or, where it is unset (a laptop without PostgreSQL),
 * an in-memory PGlite behind its socket server, so the suite never needs skipping.
 */
export interface TestDatabase {
  readonly url: string
  /** PGlite's socket serves one connection: the pool must not open more. */
  readonly maxConnections: number | undefined
  readonly kind: "postgres" | "pglite"
  /** Empties the database (every table, the migration record too) between tests. */
  readonly reset: () => Promise<void>
  /**
   * Runs SQL text of several statements without parameters (a plain-SQL `pg_dump` to load, say),
   * before any server connects: PGlite has one session, which the server's connection shares.
   */
  readonly exec: (sql: string) => Promise<void>
  readonly close: () => Promise<void>
}

const RESET = "DROP SCHEMA public CASCADE; CREATE SCHEMA public"

const admin = async (url: string, statement: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

let counter = 0

/**
 * `clients`: how many separate clients (processes) will connect. PGlite's socket serialises
 * transactions across connections but not the messages of concurrent statements outside
 * them, so with PGlite each client gets one connection and must not overlap its statements
 * with another client's.
 */
export const createTestDatabase = async (options: { clients?: number } = {}): Promise<TestDatabase> => {
  const base = process.env.DATABASE_URL
  if (base) {
    const name = `cmp_test_${process.pid}_${Date.now().toString(36)}_${++counter}`
    await admin(base, `CREATE DATABASE "${name}"`)
    const url = new URL(base)
    url.pathname = `/${name}`
    return {
      url: url.toString(),
      maxConnections: 4,
      kind: "postgres",
      reset: () => admin(url.toString(), RESET),
      exec: (sql) => admin(url.toString(), sql),
      close: () => admin(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    }
  }
  const db = await PGlite.create()
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: options.clients ?? 1 })
  await server.start()
  const url = `postgres://postgres@${server.getServerConn()}/postgres?sslmode=disable`
  return {
    url,
    maxConnections: 1,
    kind: "pglite",
    reset: async () => {
      // The previous test's pool may still be closing its one connection: wait for it.
      for (let i = 0; i < 200 && server.getStats().activeConnections > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await db.exec(RESET)
    },
    exec: async (sql) => {
      await db.exec(sql)
    },
    close: async () => {
      await server.stop()
      await db.close()
    }
  }
}
