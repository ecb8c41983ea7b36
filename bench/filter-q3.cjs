const Database = require("better-sqlite3")
const fs = require("fs")
const file = process.argv[2]
const db = new Database(file); db.pragma("cache_size = -32768")
const meta = JSON.parse(fs.readFileSync(file.replace(/\.db$/, ".json"), "utf8"))
if (process.env.IDX1) { const t=performance.now(); db.exec("CREATE INDEX IF NOT EXISTS x_users ON consent_users (organization_id, created_at, id)"); console.log("idx1", (performance.now()-t).toFixed(0)) }
if (process.env.IDX2) { const t=performance.now(); db.exec("CREATE INDEX IF NOT EXISTS x_states ON consent_user_states (organization_id, user_id, regulation, last_event_at)"); console.log("idx2", (performance.now()-t).toFixed(0)) }
const d = new Date(); d.setUTCFullYear(d.getUTCFullYear() - 1)
const T = d.toISOString()
const q = db.prepare(`SELECT * FROM "consent_users" WHERE ("organization_id" IN (?) AND EXISTS (SELECT 1 FROM "consent_user_states" WHERE "organization_id" = "consent_users"."organization_id" AND "user_id" = "consent_users"."id" AND "regulation" = 'gdpr' AND "last_event_at" <= ?)) AND ("created_at","organization_id","id") > (?,?,?) ORDER BY "created_at" ASC, "organization_id" ASC, "id" ASC LIMIT 1001`)
console.log(db.prepare("EXPLAIN QUERY PLAN " + q.source).all(meta.organization_id, T, "", "", "").map(r => r.detail).join("; "))
for (const from of ["2024-01-01", "2025-11-01", "2025-11-20", "2025-12-01"]) {
  const t0 = performance.now()
  const rows = q.all(meta.organization_id, T, from, "", "")
  console.log(from, rows.length, (performance.now() - t0).toFixed(0), "ms")
}
