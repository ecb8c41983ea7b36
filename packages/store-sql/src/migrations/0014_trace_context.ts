import { addColumn, migration, text } from "../Ddl.js"

/**
 * An outbox message keeps the trace context of the write that caused it (a W3C `traceparent`,
 * written only while traces are exported), so its delivery attempts join that trace.
 */
export default migration([
  addColumn("webhook_deliveries", "trace_context", text())
])
