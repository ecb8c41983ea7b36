import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** Member invitations, accepted by setting (or proving) a password. Frozen. */
const statements = [
  `CREATE TABLE invitations (
  id TEXT PRIMARY KEY,
  person_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  member_id TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL,
  accepted_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX invitations_member ON invitations (member_id)`
]

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.forEach(statements, (s) => sql.unsafe(s), { discard: true }))
