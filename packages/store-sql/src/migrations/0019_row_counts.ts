import { addColumn, bigint, boolean, createIndex, createTable, migration, only, raw, table, text } from "../Ddl.js"

/**
 * Row counts kept by the database, so that the `total` of a find and the counts of the delivery
 * stats cost the same whatever a table holds: `<table>_counts` holds, per value of the columns a
 * count is kept by (an organization; a webhook and a status), how many rows the table has.
 * Triggers keep it in the writing statement's own transaction, so it is exact for every write,
 * whatever wrote it (this release, an older server still running during an upgrade, a cascade,
 * an operator's SQL), and the rows present before are counted here.
 *
 * - SQLite writes one transaction at a time: each row's trigger adds to the count's one row
 *   (`slot` 0).
 * - PostgreSQL runs an organization's writers side by side, across servers: a row every writer
 *   updated would make each wait for the one before to commit. Each transaction adds its
 *   difference to a row of its own instead (`slot`: its transaction id), once per statement
 *   (statement triggers over the statement's rows), and the store folds committed slots into
 *   slot 0 now and then. A count is the sum of its rows, which one statement reads at one
 *   instant: exact before, during and after a fold.
 *
 * Also: each delivery attempt names its webhook and whether it succeeded, so a webhook's last
 * successful and last failed attempts are each the first entry of one index. The attempts
 * logged before are filled in here, and so is one a dispatcher of the previous release logs
 * during an upgrade (it names no webhook: a trigger reads it from the message).
 */

/** The tables counted, by the columns their counts are kept by (the finds of the API filter on them). */
const counted: ReadonlyArray<readonly [table: string, by: ReadonlyArray<string>, updated: "row" | "statement"]> = [
  // Their rows never change organization: an update that did would be counted by a row trigger
  // that costs nothing when it does not fire (a user is updated by every consent event).
  ["consent_users", ["organization_id"], "row"],
  ["consent_events", ["organization_id"], "row"],
  ["consent_proofs", ["organization_id"], "row"],
  // A message changes status on every claim and completion, many at once.
  ["webhook_deliveries", ["organization_id", "webhook_id", "status"], "statement"]
]

const countsTable = (name: string, by: ReadonlyArray<string>) =>
  createTable(table(`${name}_counts`, {
    ...Object.fromEntries(by.map((c) => [c, text().notNull()])),
    slot: bigint().notNull(),
    row_count: bigint().notNull()
  }, { primaryKey: [...by, "slot"] }))

const sqliteTriggers = (name: string, by: ReadonlyArray<string>) => {
  const counts = `${name}_counts`
  const columns = by.join(", ")
  const of = (row: "OLD" | "NEW") => by.map((c) => `${c} = ${row}.${c}`).join(" AND ")
  const add = `INSERT INTO ${counts} (${columns}, slot, row_count) VALUES (${by.map((c) => `NEW.${c}`).join(", ")}, 0, 1)
      ON CONFLICT (${columns}, slot) DO UPDATE SET row_count = row_count + 1;`
  // A count that reaches zero goes, so a removed organization leaves no row behind.
  const remove = `UPDATE ${counts} SET row_count = row_count - 1 WHERE ${of("OLD")} AND slot = 0;
    DELETE FROM ${counts} WHERE ${of("OLD")} AND slot = 0 AND row_count = 0;`
  return [
    `CREATE TRIGGER ${counts}_added AFTER INSERT ON ${name} BEGIN
    ${add}
  END`,
    `CREATE TRIGGER ${counts}_removed AFTER DELETE ON ${name} BEGIN
    ${remove}
  END`,
    `CREATE TRIGGER ${counts}_moved AFTER UPDATE OF ${columns} ON ${name}
    WHEN ${by.map((c) => `OLD.${c} IS NOT NEW.${c}`).join(" OR ")} BEGIN
    ${remove}
    ${add}
  END`
  ]
}

const pgTriggers = (name: string, by: ReadonlyArray<string>, updated: "row" | "statement") => {
  const counts = `${name}_counts`
  const columns = by.join(", ")
  const upsert = (rows: string) =>
    `INSERT INTO ${counts} (${columns}, slot, row_count) ${rows}
      ON CONFLICT (${columns}, slot) DO UPDATE SET row_count = ${counts}.row_count + excluded.row_count;`
  const moved = updated === "row"
    ? `IF TG_LEVEL = 'ROW' THEN
    ${upsert(`VALUES (${by.map((c) => `OLD.${c}`).join(", ")}, xact, -1), (${by.map((c) => `NEW.${c}`).join(", ")}, xact, 1)`)}`
    : `IF TG_OP = 'UPDATE' THEN
    ${
      upsert(`SELECT ${columns}, xact, SUM(n) FROM (
        SELECT ${columns}, -1 AS n FROM removed UNION ALL SELECT ${columns}, 1 FROM added
      ) AS moved GROUP BY ${columns} HAVING SUM(n) <> 0`)
    }`
  return [
    `CREATE FUNCTION ${counts}_kept() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  xact BIGINT := pg_current_xact_id()::text::bigint;
BEGIN
  ${moved}
  ELSIF TG_OP = 'INSERT' THEN
    ${upsert(`SELECT ${columns}, xact, COUNT(*) FROM added GROUP BY ${columns}`)}
  ELSIF TG_OP = 'DELETE' THEN
    ${upsert(`SELECT ${columns}, xact, -COUNT(*) FROM removed GROUP BY ${columns}`)}
  ELSIF TG_OP = 'TRUNCATE' THEN
    DELETE FROM ${counts};
  END IF;
  RETURN NULL;
END
$$`,
    `CREATE TRIGGER ${counts}_added AFTER INSERT ON ${name} REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_kept()`,
    `CREATE TRIGGER ${counts}_removed AFTER DELETE ON ${name} REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_kept()`,
    updated === "row"
      ? `CREATE TRIGGER ${counts}_moved AFTER UPDATE OF ${columns} ON ${name} FOR EACH ROW
  WHEN (${by.map((c) => `OLD.${c} IS DISTINCT FROM NEW.${c}`).join(" OR ")}) EXECUTE FUNCTION ${counts}_kept()`
      : `CREATE TRIGGER ${counts}_moved AFTER UPDATE ON ${name} REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_kept()`,
    `CREATE TRIGGER ${counts}_emptied AFTER TRUNCATE ON ${name} FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_kept()`
  ]
}

/** After the triggers: on PostgreSQL, creating them waited for the table's writers and holds them off until this commits. */
const existing = (name: string, by: ReadonlyArray<string>) => {
  const columns = by.join(", ")
  return `INSERT INTO ${name}_counts (${columns}, slot, row_count) SELECT ${columns}, 0, COUNT(*) FROM ${name} GROUP BY ${columns}`
}

export default migration([
  ...counted.flatMap(([name, by]) => [countsTable(name, by), createIndex(`${name}_counts`, `${name}_counts_slot`, ["slot"])]),
  only("sqlite", [raw(...counted.flatMap(([name, by]) => sqliteTriggers(name, by)))]),
  only("pg", [raw(...counted.flatMap(([name, by, updated]) => pgTriggers(name, by, updated)))]),
  raw(...counted.map(([name, by]) => existing(name, by))),
  addColumn("webhook_attempts", "webhook_id", text().notNull().default("")),
  addColumn("webhook_attempts", "succeeded", boolean().notNull().default(false)),
  only("sqlite", [
    raw(
      `UPDATE webhook_attempts SET
      webhook_id = COALESCE((SELECT d.webhook_id FROM webhook_deliveries d WHERE d.id = webhook_attempts.delivery_id), ''),
      succeeded = CASE WHEN status_code >= 200 AND status_code <= 299 THEN 1 ELSE 0 END`,
      `CREATE TRIGGER webhook_attempts_named AFTER INSERT ON webhook_attempts WHEN NEW.webhook_id = '' BEGIN
    UPDATE webhook_attempts SET
      webhook_id = COALESCE((SELECT d.webhook_id FROM webhook_deliveries d WHERE d.id = NEW.delivery_id), ''),
      succeeded = CASE WHEN NEW.status_code >= 200 AND NEW.status_code <= 299 THEN 1 ELSE 0 END
    WHERE id = NEW.id;
  END`
    )
  ]),
  only("pg", [
    raw(
      `UPDATE webhook_attempts AS a SET
      webhook_id = COALESCE((SELECT d.webhook_id FROM webhook_deliveries d WHERE d.id = a.delivery_id), ''),
      succeeded = COALESCE(a.status_code >= 200 AND a.status_code <= 299, false)`,
      `CREATE FUNCTION webhook_attempts_named() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.webhook_id := COALESCE((SELECT d.webhook_id FROM webhook_deliveries d WHERE d.id = NEW.delivery_id), '');
  NEW.succeeded := COALESCE(NEW.status_code >= 200 AND NEW.status_code <= 299, false);
  RETURN NEW;
END
$$`,
      `CREATE TRIGGER webhook_attempts_named BEFORE INSERT ON webhook_attempts FOR EACH ROW
  WHEN (NEW.webhook_id = '') EXECUTE FUNCTION webhook_attempts_named()`
    )
  ]),
  createIndex("webhook_attempts", "webhook_attempts_webhook", ["webhook_id", "succeeded", "attempted_at", "id"])
])
