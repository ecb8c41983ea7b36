/**
 * A webhook receiver to try webhooks on one machine: it checks the Standard Webhooks signature of
 * every call and prints one line per verified message. Plain JavaScript on `node:` modules only,
 * so it starts with `node` alone, from the repository root or from here.
 *   WEBHOOK_SECRET=whsec_… PORT=3999 node examples/webhook-receiver.mjs
 *
 * A real receiver would use the `standardwebhooks` package; the check is written out here to show
 * what it does: HMAC-SHA256, keyed with the secret's bytes, over `<webhook-id>.<timestamp>.<body>`.
 */
import * as crypto from "node:crypto"
import * as http from "node:http"

const secret = process.env.WEBHOOK_SECRET ?? ""
if (!secret.startsWith("whsec_")) {
  console.error("Set WEBHOOK_SECRET to the webhook's signing_secret (whsec_…), shown when the webhook was created")
  process.exit(1)
}
const key = Buffer.from(secret.slice("whsec_".length), "base64")
const port = Number(process.env.PORT ?? 3999)
const host = process.env.HOST ?? "127.0.0.1"
/** Older calls are refused, so a captured call cannot be played again later. */
const toleranceSeconds = 300

const verified = (headers, body) => {
  const id = headers["webhook-id"]
  const timestamp = headers["webhook-timestamp"]
  const signatures = headers["webhook-signature"]
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false
  const expected = crypto.createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest()
  // The header may carry several signatures (during a secret rotation): any one may match.
  return signatures.split(" ").some((s) => {
    const [version, value] = s.split(",")
    const given = Buffer.from(value ?? "", "base64")
    return version === "v1" && given.length === expected.length && crypto.timingSafeEqual(given, expected)
  })
}

const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8")
    if (!verified(req.headers, body)) {
      console.log(`receiver: refused a call with a bad or missing signature (${req.method} ${req.url})`)
      res.writeHead(401).end()
      return
    }
    const message = JSON.parse(body)
    // webhook-id is the same on every retry and replay of a message: the key to drop duplicates.
    console.log(`receiver: ${message.type} ${message.regulation} webhook-id=${req.headers["webhook-id"]}`)
    res.writeHead(204).end()
  })
})
server.listen(port, host, () => console.log(`receiver: listening on http://${host}:${server.address().port}`))
const stop = () => server.close(() => process.exit(0))
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
