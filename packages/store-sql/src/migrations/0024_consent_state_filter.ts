import { addColumn, boolean, json, migration, only, raw, text } from "../Ddl.js"

/**
 * What the `consent_state` filter reads of a user's state row, beside the state itself: whether
 * some vendor is enabled, the ids of the purposes enabled (a JSON array) and the notice text
 * content the last merged event names. The policy decides the rest when a find runs (which
 * purposes are essential, the durations, the re-collection date), so nothing is rewritten when
 * it changes. The triggers of 0022 are replaced by the same ones filling these columns too, then
 * the rows already kept are completed from their state.
 */

const columns = "organization_id, user_id, regulation, state, last_event_id, last_event_at, user_created_at, " +
  "vendors_enabled, enabled_purposes, notice_text_content_id"

/** The three columns, from a state's JSON `v` (text on SQLite). */
const sqliteDerived = (v: string) => [
  `COALESCE(json_array_length(${v}, '$.vendors.enabled'), 0) > 0`,
  `(SELECT json_group_array(json_extract(p.value, '$.id')) FROM json_each(${v}, '$.purposes') AS p
      WHERE json_extract(p.value, '$.enabled') = 1)`,
  `json_extract(${v}, '$.notice_text_content_id')`
]

const pgDerived = (v: string) => [
  `CASE WHEN jsonb_typeof(${v}->'vendors'->'enabled') = 'array' THEN jsonb_array_length(${v}->'vendors'->'enabled') > 0 ELSE false END`,
  `COALESCE((SELECT jsonb_agg(p->'id') FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${v}->'purposes') = 'array'
      THEN ${v}->'purposes' ELSE '[]'::jsonb END) AS p WHERE p->'enabled' = 'true'::jsonb), '[]'::jsonb)`,
  `${v}->>'notice_text_content_id'`
]

const updated = "state = excluded.state, last_event_id = excluded.last_event_id, last_event_at = excluded.last_event_at, " +
  "vendors_enabled = excluded.vendors_enabled, enabled_purposes = excluded.enabled_purposes, " +
  "notice_text_content_id = excluded.notice_text_content_id"

const sqliteRows = `SELECT NEW.organization_id, NEW.id, j.key, j.value, json_extract(j.value, '$.event_id'),
    json_extract(j.value, '$.updated_at'), NEW.created_at, ${sqliteDerived("j.value").join(", ")}
    FROM json_each(NEW.consent_states) AS j`

const sqliteUpsert = `INSERT INTO consent_user_states (${columns}) ${sqliteRows} WHERE true
    ON CONFLICT (organization_id, user_id, regulation) DO UPDATE SET ${updated}
    WHERE consent_user_states.state IS NOT excluded.state;`

const sqliteTriggers = [
  "DROP TRIGGER consent_user_states_added",
  "DROP TRIGGER consent_user_states_changed",
  "DROP TRIGGER consent_user_states_removed",
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

const sqliteBackfill = (() => {
  const [vendors, purposes, content] = sqliteDerived("state")
  return `UPDATE consent_user_states SET vendors_enabled = ${vendors}, enabled_purposes = ${purposes}, notice_text_content_id = ${content}`
})()

// The triggers of 0022 call this function: replacing it changes what they do.
const pgFunction = `CREATE OR REPLACE FUNCTION consent_user_states_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM consent_user_states WHERE organization_id = OLD.organization_id AND user_id = OLD.id;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    DELETE FROM consent_user_states AS s WHERE s.organization_id = NEW.organization_id AND s.user_id = NEW.id
      AND s.regulation NOT IN (SELECT jsonb_object_keys(NEW.consent_states));
  END IF;
  INSERT INTO consent_user_states AS s (${columns})
    SELECT NEW.organization_id, NEW.id, j.key, j.value, j.value->>'event_id', (j.value->>'updated_at')::timestamptz,
      NEW.created_at, ${pgDerived("j.value").join(", ")}
    FROM jsonb_each(NEW.consent_states) AS j
    ON CONFLICT (organization_id, user_id, regulation) DO UPDATE SET ${updated}
    WHERE s.state IS DISTINCT FROM excluded.state;
  RETURN NULL;
END
$$`

const pgBackfill = (() => {
  const [vendors, purposes, content] = pgDerived("state")
  return `UPDATE consent_user_states SET vendors_enabled = ${vendors}, enabled_purposes = ${purposes}, notice_text_content_id = ${content}`
})()

export default migration([
  addColumn("consent_user_states", "vendors_enabled", boolean().notNull().default(false)),
  addColumn("consent_user_states", "enabled_purposes", json().notNull().default("[]")),
  addColumn("consent_user_states", "notice_text_content_id", text()),
  // The triggers first, then the rows already kept: a user written in between is not missed.
  only("sqlite", [raw(...sqliteTriggers, sqliteBackfill)]),
  only("pg", [raw(pgFunction, pgBackfill)])
])
