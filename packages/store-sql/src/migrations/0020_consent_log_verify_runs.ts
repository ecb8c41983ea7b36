import { createTable, migration, only, table, text, timestamp } from "../Ddl.js"

/**
 * A consent log verify on PostgreSQL keeps its scratch in tables of its own (`UNLOGGED`, dropped
 * when it ends; SQLite's are temporary and need no record): named here first, and touched while
 * it runs, so that the tables of a verify whose process was killed are found and dropped by a
 * later one.
 */
export default migration([
  only("pg", [
    createTable(table("consent_log_verify_runs", {
      run: text().primaryKey(),
      alive_at: timestamp().notNull()
    }))
  ])
])
