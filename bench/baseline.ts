/**
 * The baseline of the consent-events figure: a hand-written Express handler inserting the same
 * JSON with a prepared better-sqlite3 statement, the least any server could do per request.
 */
import Database from "better-sqlite3"
import express from "express"
import * as crypto from "node:crypto"

const db = new Database(process.env.BASELINE_DB ?? ":memory:")
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL")
db.exec("CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, organization_id TEXT, body TEXT, created_at TEXT)")
const insert = db.prepare("INSERT INTO events (id, organization_id, body, created_at) VALUES (?, ?, ?, ?)")

const app = express()
app.use(express.json({ limit: "1mb" }))
app.post("/v1/consents/events", (req, res) => {
  const row = { id: crypto.randomUUID(), ...req.body, created_at: new Date().toISOString() }
  insert.run(row.id, row.organization_id, JSON.stringify(row), row.created_at)
  res.status(201).json(row)
})
const server = app.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number }
  process.stdout.write(`${JSON.stringify({ port })}\n`)
})
