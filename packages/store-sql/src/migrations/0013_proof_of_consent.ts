import { addColumn, bigint, bytes, createIndex, createTable, integer, json, migration, only, raw, table, text, timestamp } from "../Ddl.js"

/**
 * Proof of consent: proofs (their bytes apart, so reading a proof's row never reads its file),
 * which proofs each event names, proof reports, and the tamper-evident consent log with the
 * head of each of its chains. Events name their proofs and the wording shown.
 */
export default migration([
  createTable(table("consent_proofs", {
    id: text().notNull(),
    organization_id: text().notNull(),
    size: integer().notNull(),
    media_type: text().notNull(),
    sha256: text().notNull(),
    created_at: timestamp().notNull(),
    user_id: text()
  }, { primaryKey: ["organization_id", "id"] })),
  createIndex("consent_proofs", "consent_proofs_organization", ["organization_id", "created_at"]),
  createIndex("consent_proofs", "consent_proofs_user", ["organization_id", "user_id"]),
  createTable(table("consent_proof_files", {
    organization_id: text().notNull(),
    id: text().notNull(),
    bytes: bytes().notNull()
  }, { primaryKey: ["organization_id", "id"] })),
  createTable(table("consent_event_proofs", {
    organization_id: text().notNull(),
    id: text().notNull(),
    event_id: text().notNull(),
    proof_id: text().notNull(),
    created_at: timestamp().notNull()
  }, { primaryKey: ["organization_id", "id"] })),
  createIndex("consent_event_proofs", "consent_event_proofs_proof", ["organization_id", "proof_id"]),
  createIndex("consent_event_proofs", "consent_event_proofs_event", ["organization_id", "event_id"]),
  createTable(table("consent_proof_reports", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    user_id: text().notNull(),
    organization_user_id: text(),
    regulation: text(),
    sha256: text().notNull(),
    report: json().notNull(),
    created_at: timestamp().notNull()
  })),
  createIndex("consent_proof_reports", "consent_proof_reports_organization", ["organization_id", "created_at"]),
  createTable(table("consent_log", {
    organization_id: text().notNull(),
    shard: integer().notNull(),
    seq: bigint().notNull(),
    created_at: timestamp().notNull(),
    changes: text().notNull(),
    hash: text().notNull()
  }, { primaryKey: ["organization_id", "shard", "seq"] })),
  createTable(table("consent_log_heads", {
    organization_id: text().notNull(),
    shard: integer().notNull(),
    seq: bigint().notNull(),
    hash: text().notNull(),
    changes: text().notNull(),
    created_at: timestamp().notNull()
  }, { primaryKey: ["organization_id", "shard"] })),
  // On SQLite, moving a chain's head writes its entry: an append is one statement.
  only("sqlite", [
    raw(`CREATE TRIGGER consent_log_append AFTER UPDATE OF seq ON consent_log_heads
  BEGIN
    INSERT INTO consent_log (organization_id, shard, seq, created_at, changes, hash)
    VALUES (NEW.organization_id, NEW.shard, NEW.seq, NEW.created_at, NEW.changes, NEW.hash);
  END`)
  ]),
  addColumn("consent_events", "proofs_id", json().notNull().default("[]")),
  addColumn("consent_events", "notice_text_content_id", text())
])
