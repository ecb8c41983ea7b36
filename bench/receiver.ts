/**
 * A webhook receiver for the benchmark, in its own process so it does not share a CPU core's
 * event loop with the load generator: answers 204 at once and reports arrivals on stdout.
 */
import * as http from "node:http"

let count = 0
let first = 0
let last = 0
const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    const now = performance.now() + performance.timeOrigin
    if (count === 0) first = now
    last = now
    count++
    res.writeHead(204)
    res.end()
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number }
  process.stdout.write(`${JSON.stringify({ port })}\n`)
})
// The parent asks for the figures by writing a line.
process.stdin.on("data", () => {
  process.stdout.write(`${JSON.stringify({ count, first, last })}\n`)
})
