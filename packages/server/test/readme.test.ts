import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { childEnv, freePort, killLeftovers, repositoryRoot, startServer } from "./built.js"

/**
 * The README's walk-throughs, run as a reader runs them: the server started with the command the
 * README gives (on a new SQLite file), then every shell block of the walk-through sections pasted
 * into one bash, in order, from the repository root. Only the API's address and the receiver's
 * port are rewritten, to free ones. A `curl` wrapper fails the script on any 4xx or 5xx and logs
 * each call's status, which is what the assertions read, with the receiver's lines.
 */

const SECTIONS = ["Try it", "Consents and webhooks", "Notices", "Organization resources", "Collecting consent in the browser", "Proof of consent"]
const readme = fs.readFileSync(path.join(repositoryRoot, "README.md"), "utf8")

/** The ```sh blocks of the section whose heading starts with `title`. */
const shellBlocks = (title: string): Array<string> => {
  const section = readme.split(/^## /m).find((s) => s.startsWith(title))
  if (section === undefined) throw new Error(`README has no section '${title}'`)
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-readme-"))
let shell: number | undefined
afterAll(() => {
  // The receivers the walk-through starts belong to the shell's process group.
  if (shell !== undefined) {
    try {
      process.kill(-shell, "SIGKILL")
    } catch {
      // already gone
    }
  }
  killLeftovers()
  fs.rmSync(dir, { recursive: true, force: true })
})

const runShell = (script: string) =>
  new Promise<{ code: number | string; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("bash", ["-c", script], { cwd: repositoryRoot, detached: true, env: childEnv({}) })
    shell = child.pid
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += String(d)))
    child.stderr.on("data", (d) => (stderr += String(d)))
    child.once("exit", (code, signal) => resolve({ code: code ?? signal ?? "unknown", stdout, stderr }))
  })

/** Replaces the one line `from` of the script, which must be there exactly once. */
const rewrite = (script: string, from: string, to: string) => {
  expect(script.split("\n").filter((l) => l === from), `the README sets ${from}`).toHaveLength(1)
  return script.replace(from, to)
}

// SQLite is the store the README starts on; the PostgreSQL run of the suite has nothing to add.
describe.skipIf(process.env.CMP_TEST_STORE === "postgres")("README walk-throughs", () => {
  it("run as pasted, in one shell, against the server the README starts", async () => {
    const [setup, ...walk] = shellBlocks("Try it")
    // The walk-through's server: `NAME=value … pnpm start`.
    const command = /^((?:[A-Z_]+=\S+ )+)pnpm start$/m.exec(setup ?? "")
    expect(command, "Try it opens with the server command").not.toBeNull()
    const readmeEnv = Object.fromEntries(command![1]!.trim().split(/ +/).map((pair) => pair.split(/=(.*)/s).slice(0, 2)))
    expect(readmeEnv).toMatchObject({ WEBHOOK_ALLOW_HOSTS: "127.0.0.1", ALLOW_HTTP: "true" })

    const server = await startServer(childEnv({ ...readmeEnv, SQLITE_PATH: path.join(dir, "consent.db"), LOG_LEVEL: "Warning" }))
    const hookPort = await freePort()
    const blocks = [...walk, ...SECTIONS.slice(1).flatMap(shellBlocks)]
    expect(blocks.length).toBeGreaterThanOrEqual(SECTIONS.length)
    let script = blocks.join("\n")
    script = rewrite(script, "API=http://127.0.0.1:3000", `API=${server.url}`)
    script = rewrite(script, "HOOK_PORT=3999", `HOOK_PORT=${hookPort}`)
    const run = await runShell([
      "set -euo pipefail",
      `curl() { command curl --fail-with-body --write-out '%{stderr}HTTP %{http_code} %{method} %{url_effective}\\n' "$@"; }`,
      script
    ].join("\n"))
    const report = `exit ${run.code}\n--- calls and errors\n${run.stderr}\n--- output\n${run.stdout}\n--- server\n${server.output()}`
    expect(run.code, report).toBe(0)

    // Every call answered 2xx (the wrapper stops at the first that does not), and the ones that
    // need a value from an earlier answer were made with it.
    const calls = [...run.stderr.matchAll(/^HTTP (\d{3}) (\S+) (\S+)$/gm)].map((m) => ({
      status: Number(m[1]),
      call: `${m[2]} ${new URL(m[3]!).pathname}`
    }))
    expect(calls.length, report).toBeGreaterThan(30)
    expect(calls.filter((c) => c.status >= 300), report).toEqual([])
    const statusOf = (pattern: RegExp) => calls.filter((c) => pattern.test(c.call)).map((c) => c.status)
    expect(statusOf(/^POST \/v1\/vendors$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/cookies$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/platform-integrations\/sessions$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/widgets\/notices\/generators\/sdk$/), report).toEqual([201])
    // The second read of u-42 is the browser section's, with a consent token.
    expect(statusOf(/^GET \/v1\/consents\/users\/u-42$/), report).toEqual([200, 200])
    expect(statusOf(/^POST \/v1\/webhooks\/deliveries\/msg_\w+\/replay$/), report).toEqual([200])
    expect(statusOf(/^POST \/v1\/webhooks\/deliveries\/replay$/), report).toEqual([200])
    // The browser section: two guest writes and a signed user's through the public key, and one
    // with the consent token, after the two of the webhook walk-through.
    expect(statusOf(/^POST \/v1\/consents\/tokens$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/consents\/events$/), report).toEqual([201, 201, 201, 201, 201, 201, 201])
    // Proof of consent: a proof kept with an event, a report of its user and its PDF, a verify
    // whose answer says the log is valid.
    expect(statusOf(/^GET \/v1\/consents\/proofs\/[^/]+\/file$/), report).toEqual([200])
    expect(statusOf(/^POST \/v1\/consents\/proof-reports$/), report).toEqual([201])
    expect(statusOf(/^GET \/v1\/consents\/proof-reports\/[^/]+\/pdf$/), report).toEqual([200])
    expect(statusOf(/^GET \/v1\/consents\/log\/verify$/), report).toEqual([200])
    expect(run.stdout, report).toMatch(/"valid":true,"head":"[0-9a-f]{64}","first_invalid":null/)

    // The receiver: two messages of the first event; then, back after being down, the two of the
    // second event, which had failed, replayed. No call failed its signature check.
    expect(run.stdout).not.toMatch(/bad or missing signature/)
    const [beforeDown, afterReplay] = run.stdout.split(/receiver: listening on /).slice(1)
    const lines = (text: string | undefined) =>
      [...(text ?? "").matchAll(/receiver: ([a-z.]+) gdpr webhook-id=(msg_\w+)/g)].map((m) => ({ type: m[1]!, id: m[2]! }))
    const delivered = lines(beforeDown)
    const replayed = lines(afterReplay)
    expect(delivered.map((l) => l.type).sort(), report).toEqual(["event.created", "user.created"])
    expect(replayed.map((l) => l.type).sort(), report).toEqual(["event.created", "user.updated"])

    // What the server recorded for the replayed messages: failed attempts while the receiver was
    // down, then the receiver's 204.
    const session = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "api-key", key: readmeEnv.ADMIN_API_KEY, secret: readmeEnv.ADMIN_API_SECRET })
    })
    const { access_token } = await session.json() as { access_token: string }
    for (const { id } of replayed) {
      const res = await fetch(`${server.url}/v1/webhooks/deliveries/${id}`, { headers: { authorization: `Bearer ${access_token}` } })
      const message = await res.json() as { status: string; attempts: Array<{ status_code: number | null; error: string | null }> }
      expect(message.status).toBe("delivered")
      expect(message.attempts.at(-1)!.status_code).toBe(204)
      const failed = message.attempts.slice(0, -1)
      // The first attempt and one per retry of the README's schedule, at least.
      expect(failed.length).toBeGreaterThanOrEqual(readmeEnv.WEBHOOK_RETRY_SCHEDULE!.split(",").length + 1)
      for (const a of failed) expect([a.status_code, a.error]).toEqual([null, expect.stringMatching(/ECONNREFUSED/)])
    }
  }, 60_000)
})
