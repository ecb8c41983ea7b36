import { createIndex, migration, only } from "../Ddl.js"

/**
 * The messages in flight, by when their lease ends: what a dispatcher reads on every claim (a
 * lease that lapsed) and before every idle wait (the next lease to lapse). Only leased messages
 * have an entry, so the read stays as short as the calls in flight. Before it, those reads went
 * through `(status, …)` indexes whose `delivering` range, on PostgreSQL, also holds an entry of
 * every message delivered since the table was last vacuumed: under load the planner read them
 * all, and every row behind them, on every claim. SQLite keeps no entry of a row's past
 * versions: its `(status, …)` indexes stay as short there.
 */
export default migration([
  only("pg", [
    createIndex("webhook_deliveries", "webhook_deliveries_leased", ["lease_until"], { where: "status = 'delivering'" })
  ])
])
