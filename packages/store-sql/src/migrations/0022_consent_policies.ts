import { boolean, createIndex, createTable, integer, json, migration, only, raw, table, text, timestamp } from "../Ddl.js"

/**
 * Consent over time: an organization's consent policy per regulation (how long a choice lasts,
 * when it is asked again, what a browser's privacy signal refuses), and the users' states, one
 * row per user and regulation, which the database keeps from `consent_users.consent_states`
 * with triggers (in the writing statement's transaction, whatever wrote it) and which this
 * migration fills from the users already stored.
 */

const columns = "organization_id, user_id, regulation, state, last_event_id, last_event_at, user_created_at"

/** A user's states as rows; `from` names the user `u` (NEW in a trigger). */
const sqliteRows = (user: string, from = "") =>
  `SELECT ${user}.organization_id, ${user}.id, j.key, j.value, json_extract(j.value, '$.event_id'),
    json_extract(j.value, '$.updated_at'), ${user}.created_at FROM ${from}json_each(${user}.consent_states) AS j`

const sqliteUpsert = `INSERT INTO consent_user_states (${columns}) ${sqliteRows("NEW")} WHERE true
    ON CONFLICT (organization_id, user_id, regulation) DO UPDATE SET
      state = excluded.state, last_event_id = excluded.last_event_id, last_event_at = excluded.last_event_at
    WHERE consent_user_states.state IS NOT excluded.state;`

const sqliteTriggers = [
  `CREATE TRIGGER consent_user_states_added AFTER INSERT ON consent_users BEGIN
    ${sqliteUpsert}
  END`,
  `CREATE TRIGGER consent_user_states_changed AFTER UPDATE OF consent_states ON consent_users
    WHEN OLD.consent_states IS NOT NEW.consent_states BEGIN
    DELETE FROM consent_user_states WHERE organization_id = NEW.organization_id AND user_id = NEW.id
      AND regulation NOT IN (SELECT key FROM json_each(NEW.consent_states));
    ${sqliteUpsert}
  END`,
  `CREATE TRIGGER consent_user_states_removed AFTER DELETE ON consent_users BEGIN
    DELETE FROM consent_user_states WHERE organization_id = OLD.organization_id AND user_id = OLD.id;
  END`
]

const pgRows = (user: string, from = "") =>
  `SELECT ${user}.organization_id, ${user}.id, j.key, j.value, j.value->>'event_id',
    (j.value->>'updated_at')::timestamptz, ${user}.created_at FROM ${from}jsonb_each(${user}.consent_states) AS j`

const pgTriggers = [
  `CREATE FUNCTION consent_user_states_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM consent_user_states WHERE organization_id = OLD.organization_id AND user_id = OLD.id;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    DELETE FROM consent_user_states AS s WHERE s.organization_id = NEW.organization_id AND s.user_id = NEW.id
      AND s.regulation NOT IN (SELECT jsonb_object_keys(NEW.consent_states));
  END IF;
  INSERT INTO consent_user_states AS s (${columns}) ${pgRows("NEW")}
    ON CONFLICT (organization_id, user_id, regulation) DO UPDATE SET
      state = excluded.state, last_event_id = excluded.last_event_id, last_event_at = excluded.last_event_at
    WHERE s.state IS DISTINCT FROM excluded.state;
  RETURN NULL;
END
$$`,
  `CREATE TRIGGER consent_user_states_added AFTER INSERT ON consent_users FOR EACH ROW EXECUTE FUNCTION consent_user_states_kept()`,
  `CREATE TRIGGER consent_user_states_changed AFTER UPDATE OF consent_states ON consent_users FOR EACH ROW
  WHEN (OLD.consent_states IS DISTINCT FROM NEW.consent_states) EXECUTE FUNCTION consent_user_states_kept()`,
  `CREATE TRIGGER consent_user_states_removed AFTER DELETE ON consent_users FOR EACH ROW EXECUTE FUNCTION consent_user_states_kept()`
]
export default migration([
  createTable(table("consent_policies", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    regulation: text().notNull(),
    consent_duration: integer().notNull(),
    consent_duration_unit: text().notNull(),
    denied_consent_duration: integer(),
    denied_consent_duration_unit: text(),
    recollect_before: timestamp(),
    notice_text_id: text(),
    recollect_on_new_content: boolean().notNull().default(false),
    gpc_purpose_ids: json().notNull(),
    essential_purpose_ids: json().notNull(),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  }, { unique: [["organization_id", "regulation"]] })),
  createIndex("consent_policies", "consent_policies_organization", ["organization_id", "created_at"]),
  createTable(table("consent_user_states", {
    organization_id: text().notNull(),
    user_id: text().notNull(),
    regulation: text().notNull(),
    state: json().notNull(),
    last_event_id: text(),
    last_event_at: timestamp(),
    user_created_at: timestamp().notNull(),
    announced_event_id: text()
  }, { primaryKey: ["organization_id", "user_id", "regulation"] })),
  createIndex("consent_user_states", "consent_user_states_page", ["organization_id", "regulation", "user_created_at", "user_id"]),
  createIndex("consent_user_states", "consent_user_states_due", ["organization_id", "regulation", "last_event_at"]),
  // The triggers first, then the users already stored: a user written in between is not missed.
  only("sqlite", [raw(...sqliteTriggers, `INSERT INTO consent_user_states (${columns}) ${sqliteRows("u", "consent_users AS u, ")} WHERE true ON CONFLICT DO NOTHING`)]),
  only("pg", [raw(...pgTriggers, `INSERT INTO consent_user_states (${columns}) ${pgRows("u", "consent_users AS u, ")} ON CONFLICT DO NOTHING`)])
])
