/**
 * The baselines: hand-written Express handlers doing the least any server could do per request.
 * - POST /v1/consents/events inserts the JSON with one prepared better-sqlite3 statement, or one
 *   `pg` insert when BASELINE_PG is a PostgreSQL URL;
 * - GET /v1/keys/:id answers a key-shaped JSON object from memory.
 */
import Database from "better-sqlite3"
import express from "express"
import * as crypto from "node:crypto"
import pg from "pg"

const insertRow: (row: { id: string; organization_id: string; body: string; created_at: string }) => Promise<void> =
  process.env.BASELINE_PG
    ? (() => {
      const pool = new pg.Pool({ connectionString: process.env.BASELINE_PG, max: 10 })
      void pool.query("CREATE TABLE IF NOT EXISTS baseline_events (id TEXT PRIMARY KEY, organization_id TEXT, body JSONB, created_at TIMESTAMPTZ)")
      return async (r) => {
        await pool.query("INSERT INTO baseline_events (id, organization_id, body, created_at) VALUES ($1, $2, $3, $4)", [
          r.id,
          r.organization_id,
          r.body,
          r.created_at
        ])
      }
    })()
    : (() => {
      const db = new Database(process.env.BASELINE_DB ?? ":memory:")
      db.pragma("journal_mode = WAL")
      db.pragma("synchronous = NORMAL")
      db.exec("CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, organization_id TEXT, body TEXT, created_at TEXT)")
      const insert = db.prepare("INSERT INTO events (id, organization_id, body, created_at) VALUES (?, ?, ?, ?)")
      return async (r) => {
        insert.run(r.id, r.organization_id, r.body, r.created_at)
      }
    })()

const key = {
  id: "00000000-0000-4000-8000-000000000000",
  name: "bench",
  description: null,
  organization_id: "00000000-0000-4000-8000-000000000001",
  enabled: true,
  is_internal: false,
  created_at: "2026-11-23T00:00:00.000Z",
  updated_at: "2026-11-23T00:00:00.000Z",
  version: 1
}

const app = express()
app.use(express.json({ limit: "1mb" }))
app.post("/v1/consents/events", (req, res, next) => {
  const row = { id: crypto.randomUUID(), ...req.body, created_at: new Date().toISOString() }
  insertRow({ id: row.id, organization_id: row.organization_id, body: JSON.stringify(row), created_at: row.created_at }).then(
    () => res.status(201).json(row),
    next
  )
})
app.get("/v1/keys/:id", (req, res) => {
  res.json({ ...key, id: req.params.id })
})
const server = app.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number }
  process.stdout.write(`${JSON.stringify({ port })}\n`)
})
