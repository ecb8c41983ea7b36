/**
 * A webhook receiver for the benchmark, in its own process so it does not share an event loop
 * with the load generator: answers 204 at once and reports arrivals on stdout when asked.
 */
import * as http from "node:http"

let count = 0
let first = 0
let last = 0
/** event id → arrival time (ms since epoch), for the latency figure. */
let arrivals = new Map<string, number>()
const server = http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const now = performance.timeOrigin + performance.now()
    if (count === 0) first = now
    last = now
    count++
    res.writeHead(204)
    res.end()
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const id = body?.parameters?.entity?.id
      if (typeof id === "string") arrivals.set(id, now)
    } catch {
      // not JSON: counted, not timed
    }
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number }
  process.stdout.write(`${JSON.stringify({ port })}\n`)
})
// A line "stats" asks for the counters, "arrivals" for the timings, "reset" starts over.
const lines = (await import("node:readline")).createInterface({ input: process.stdin })
lines.on("line", (line) => {
  if (line === "reset") {
    count = 0
    arrivals = new Map()
    process.stdout.write("{}\n")
  } else if (line === "arrivals") process.stdout.write(`${JSON.stringify([...arrivals.entries()])}\n`)
  else process.stdout.write(`${JSON.stringify({ count, first, last })}\n`)
})
