/**
 * The baselines: hand-written Express handlers doing the least any server could do per request.
 * - POST /v1/consents/events inserts the JSON with one prepared better-sqlite3 statement, or one
 *   `pg` insert when BASELINE_PG is a PostgreSQL URL;
 * - with BASELINE_WEBHOOK (a URL) and BASELINE_WEBHOOK_SECRET (`whsec_…`), the same write inserts
 *   the event and its outbox message together (a transaction on SQLite, one statement on
 *   PostgreSQL) and, once answered, sends the message signed (Standard Webhooks, the library the
 *   server signs with) on kept-alive connections and marks it delivered when the receiver
 *   answers 2xx: the least a server that delivers each event's webhook at least once must do,
 *   without retries, leases or an attempt log;
 * - GET /v1/keys/:id answers a key-shaped JSON object from memory.
 */
import Database from "better-sqlite3"
import express from "express"
import * as crypto from "node:crypto"
import * as http from "node:http"
import pg from "pg"
import { Webhook } from "standardwebhooks"

interface Row {
  readonly id: string
  readonly organization_id: string
  readonly body: string
  readonly created_at: string
}
interface Store {
  readonly insert: (row: Row) => Promise<void>
  /** The event and its outbox message, written together. */
  readonly insertWithMessage: (row: Row, messageId: string, payload: string) => Promise<void>
  readonly delivered: (messageId: string) => Promise<void>
  /** Settles once the tables exist: the port is printed only then. */
  readonly ready: Promise<unknown>
}

const store: Store = process.env.BASELINE_PG
  ? (() => {
    const pool = new pg.Pool({ connectionString: process.env.BASELINE_PG, max: 10 })
    const tables = () =>
      pool.query(`CREATE TABLE IF NOT EXISTS baseline_events (id TEXT PRIMARY KEY, organization_id TEXT, body JSONB, created_at TIMESTAMPTZ);
      CREATE TABLE IF NOT EXISTS baseline_outbox (id TEXT PRIMARY KEY, event_id TEXT, payload JSONB, status TEXT, created_at TIMESTAMPTZ)`)
    return {
      // Two processes creating the tables at once may collide in the catalog: the second try sees them.
      ready: tables().catch(tables),
      insert: async (r) => {
        await pool.query("INSERT INTO baseline_events (id, organization_id, body, created_at) VALUES ($1, $2, $3, $4)", [
          r.id,
          r.organization_id,
          r.body,
          r.created_at
        ])
      },
      insertWithMessage: async (r, messageId, payload) => {
        await pool.query(
          `WITH e AS (INSERT INTO baseline_events (id, organization_id, body, created_at) VALUES ($1, $2, $3, $4) RETURNING id)
          INSERT INTO baseline_outbox (id, event_id, payload, status, created_at) SELECT $5, e.id, $6, 'pending', $4 FROM e`,
          [r.id, r.organization_id, r.body, r.created_at, messageId, payload]
        )
      },
      delivered: async (messageId) => {
        await pool.query("UPDATE baseline_outbox SET status = 'delivered' WHERE id = $1", [messageId])
      }
    }
  })()
  : (() => {
    const db = new Database(process.env.BASELINE_DB ?? ":memory:")
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = NORMAL")
    db.exec(`CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, organization_id TEXT, body TEXT, created_at TEXT);
      CREATE TABLE IF NOT EXISTS outbox (id TEXT PRIMARY KEY, event_id TEXT, payload TEXT, status TEXT, created_at TEXT)`)
    const ready = Promise.resolve()
    const insert = db.prepare("INSERT INTO events (id, organization_id, body, created_at) VALUES (?, ?, ?, ?)")
    const insertMessage = db.prepare("INSERT INTO outbox (id, event_id, payload, status, created_at) VALUES (?, ?, ?, 'pending', ?)")
    const both = db.transaction((r: Row, messageId: string, payload: string) => {
      insert.run(r.id, r.organization_id, r.body, r.created_at)
      insertMessage.run(messageId, r.id, payload, r.created_at)
    })
    const markDelivered = db.prepare("UPDATE outbox SET status = 'delivered' WHERE id = ?")
    return {
      ready,
      insert: async (r) => {
        insert.run(r.id, r.organization_id, r.body, r.created_at)
      },
      insertWithMessage: async (r, messageId, payload) => {
        both(r, messageId, payload)
      },
      delivered: async (messageId) => {
        markDelivered.run(messageId)
      }
    }
  })()

const webhookUrl = process.env.BASELINE_WEBHOOK ? new URL(process.env.BASELINE_WEBHOOK) : undefined
const signer = process.env.BASELINE_WEBHOOK_SECRET ? new Webhook(process.env.BASELINE_WEBHOOK_SECRET) : undefined
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })

/** Sends one message signed; marks it delivered on a 2xx answer (no retry: a bare baseline). */
const deliver = (messageId: string, payload: string) => {
  const at = new Date()
  const req = http.request({
    host: webhookUrl!.hostname,
    port: webhookUrl!.port,
    path: webhookUrl!.pathname,
    method: "POST",
    agent,
    headers: {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(payload),
      "webhook-id": messageId,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signer!.sign(messageId, at, payload)
    }
  }, (res) => {
    res.resume()
    res.on("end", () => {
      if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) void store.delivered(messageId)
    })
  })
  req.on("error", () => {})
  req.end(payload)
}

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
  const stored = { id: row.id, organization_id: row.organization_id, body: JSON.stringify(row), created_at: row.created_at }
  if (webhookUrl === undefined || signer === undefined) {
    store.insert(stored).then(() => res.status(201).json(row), next)
    return
  }
  const messageId = `msg_${crypto.randomUUID()}`
  const payload = JSON.stringify({ type: "event.created", parameters: { entity: row }, regulation: "gdpr" })
  store.insertWithMessage(stored, messageId, payload).then(() => {
    res.status(201).json(row)
    deliver(messageId, payload)
  }, next)
})
app.get("/v1/keys/:id", (req, res) => {
  res.json({ ...key, id: req.params.id })
})
await store.ready
const server = app.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number }
  process.stdout.write(`${JSON.stringify({ port })}\n`)
})
