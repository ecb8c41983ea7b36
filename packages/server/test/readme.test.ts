import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { childEnv, freePort, killLeftovers, repositoryRoot, startServer } from "./built.js"

/**
 * The walk-through (`docs/walkthrough.md`), run as a reader runs it: the server started with the
 * command it gives (on a new SQLite file), then every shell block of its sections pasted into one
 * bash, in order, from the repository root; then all of it once more, in a new bash against the
 * same server, as a reader who runs it again. Only the API's address and the receiver's port are
 * rewritten, to free ones. `curl` on the shell's PATH is a wrapper that fails the script on any
 * 4xx or 5xx and logs each call's status, which is what the assertions read, with the receiver's
 * lines. And the README's own two commands are the ones it names.
 */

const SECTIONS = ["Try it", "Consents and webhooks", "Notices", "Organization resources", "Collecting consent in the browser", "Proof of consent", "Consent over time", "Privacy center"]
const walkthrough = fs.readFileSync(path.join(repositoryRoot, "docs", "walkthrough.md"), "utf8")
const readme = fs.readFileSync(path.join(repositoryRoot, "README.md"), "utf8")

/** The ```sh blocks of `text`. */
const shellBlocksOf = (text: string): Array<string> => [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)

/** The ```sh blocks of the walk-through's section whose heading starts with `title`. */
const shellBlocks = (title: string): Array<string> => {
  const section = walkthrough.split(/^## /m).find((s) => s.startsWith(title))
  if (section === undefined) throw new Error(`docs/walkthrough.md has no section '${title}'`)
  return shellBlocksOf(section)
}

const [setup, ...walk] = shellBlocks("Try it")
const blocks = [...walk, ...SECTIONS.slice(1).flatMap(shellBlocks)]

/** `NAME=value …` of a `NAME=value … pnpm start` line of `block`, or undefined. */
const startEnv = (block: string | undefined): Record<string, string> | undefined => {
  const command = /^((?:[A-Z_]+=\S+ )+)pnpm start$/m.exec(block ?? "")
  if (command === null) return undefined
  return Object.fromEntries(command[1]!.trim().split(/ +/).map((pair) => pair.split(/=(.*)/s).slice(0, 2) as [string, string]))
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-readme-"))
const shells = new Set<number>()
afterAll(() => {
  // The receivers the walk-through starts belong to the shell's process group.
  for (const shell of shells) {
    try {
      process.kill(-shell, "SIGKILL")
    } catch {
      // already gone
    }
  }
  killLeftovers()
  fs.rmSync(dir, { recursive: true, force: true })
})

/**
 * A directory holding `curl`: the real one, told to fail on a 4xx or 5xx and to log each call's
 * status, method and URL on stderr. Its options come last, so they win over the walk-through's
 * own `-w`; it ends the answer with a newline as that does.
 */
const curlWrapper = () => {
  const real = spawnSync("bash", ["-c", "command -v curl"], { encoding: "utf8" }).stdout.trim()
  expect(real, "curl is installed").not.toBe("")
  const bin = path.join(dir, "bin")
  fs.mkdirSync(bin, { recursive: true })
  fs.writeFileSync(
    path.join(bin, "curl"),
    `#!/bin/sh\nexec '${real}' "$@" --fail-with-body --write-out '%{stderr}HTTP %{http_code} %{method} %{url_effective}\\n%{stdout}\\n'\n`,
    { mode: 0o755 }
  )
  return bin
}

const runShell = (script: string, env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number | string; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("bash", ["-c", script], { cwd: repositoryRoot, detached: true, env })
    if (child.pid !== undefined) shells.add(child.pid)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += String(d)))
    child.stderr.on("data", (d) => (stderr += String(d)))
    child.once("exit", (code, signal) => resolve({ code: code ?? signal ?? "unknown", stdout, stderr }))
  })

/** Replaces the one line `from` of the script, which must be there exactly once. */
const rewrite = (script: string, from: string, to: string) => {
  expect(script.split("\n").filter((l) => l === from), `the walk-through sets ${from}`).toHaveLength(1)
  return script.replace(from, to)
}

describe("the README's commands", () => {
  it("start the server on the SQLite default and run the tests; the walk-through's server adds to the first", () => {
    const commands = shellBlocksOf(readme).map((b) => b.trim())
    const start = "pnpm install && ALLOW_HTTP=true ADMIN_API_KEY=admin ADMIN_API_SECRET=change-me-0123456789 pnpm start"
    expect(commands).toContain(start)
    expect(commands).toContain("pnpm install && pnpm test")
    expect(startEnv(setup)).toMatchObject(startEnv(start.replace("pnpm install && ", ""))!)
  })

  it("the walk-through's shell blocks are all in the sections run below, in order", () => {
    expect([setup, ...blocks]).toEqual(shellBlocksOf(walkthrough))
  })
})

describe("the walk-through's field helper", () => {
  const definition = /^field\(\) \{\n[\s\S]*?^\}$/m.exec(walk[0] ?? "")?.[0]
  const field = (answer: string, name: string) =>
    spawnSync("bash", ["-c", `${definition}\nprintf '%s' "$1" | field "$2"`, "bash", answer, name], { encoding: "utf8" })

  it("prints a field of the answer: a string as it is, anything else as JSON", () => {
    expect(definition, "Try it defines field()").toBeDefined()
    const answer = JSON.stringify({ id: "org_1", total: 0, data: [{ id: "pf_1" }], flags: { on: true } })
    expect([field(answer, "id").stdout, field(answer, "total").stdout]).toEqual(["org_1\n", "0\n"])
    expect([field(answer, "data[0].id").stdout, field(answer, "flags").stdout]).toEqual(["pf_1\n", "{\"on\":true}\n"])
    expect(field(answer, "id").status).toBe(0)
  })

  it("fails on a field the answer does not have, naming it and showing the answer", () => {
    const refused = JSON.stringify({ name: "Conflict", message: "An organization named Acme exists", code: 409 })
    const missing = field(refused, "id")
    expect(missing.status).not.toBe(0)
    expect(missing.stdout).toBe("")
    expect(missing.stderr).toContain(`field: no id in the answer: ${refused}`)
    expect(field(JSON.stringify({ data: [] }), "data[0].id").status).not.toBe(0)
    const notJson = field("<html>Bad Gateway</html>", "id")
    expect([notJson.status, notJson.stderr]).toEqual([1, "field: no id in the answer: <html>Bad Gateway</html>\n"])
  })
})

// SQLite is the store the walk-through starts on; the PostgreSQL run of the suite has nothing to add.
describe.skipIf(process.env.CMP_TEST_STORE === "postgres")("the walk-through", () => {
  const walkEnv = startEnv(setup)
  let server: Awaited<ReturnType<typeof startServer>>
  let script: string
  let shellEnv: NodeJS.ProcessEnv

  beforeAll(async () => {
    expect(walkEnv, "Try it opens with the server command").toBeDefined()
    expect(walkEnv).toMatchObject({ WEBHOOK_ALLOW_HOSTS: "127.0.0.1", ALLOW_HTTP: "true" })
    server = await startServer(childEnv({ ...walkEnv, SQLITE_PATH: path.join(dir, "consent.db"), LOG_LEVEL: "Warning" }))
    expect(blocks.length).toBeGreaterThanOrEqual(SECTIONS.length)
    script = blocks.join("\n")
    script = rewrite(script, "API=http://127.0.0.1:3000", `API=${server.url}`)
    script = rewrite(script, "HOOK_PORT=3999", `HOOK_PORT=${await freePort()}`)
    script = rewrite(script, "EXPIRY_PORT=3998", `EXPIRY_PORT=${await freePort()}`)
    shellEnv = childEnv({ PATH: `${curlWrapper()}${path.delimiter}${process.env.PATH ?? ""}` })
  })

  /** A session of the walk-through's operator key. */
  const operatorToken = async () => {
    const session = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "api-key", key: walkEnv!.ADMIN_API_KEY, secret: walkEnv!.ADMIN_API_SECRET })
    })
    expect(session.status).toBe(201)
    return ((await session.json()) as { access_token: string }).access_token
  }

  /** One run of the whole walk-through in a new bash, and what it must have done. */
  const runOnce = async () => {
    const run = await runShell(["set -euo pipefail", script].join("\n"), shellEnv)
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
    expect(statusOf(/^POST \/v1\/organizations$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/vendors$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/cookies$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/platform-integrations\/sessions$/), report).toEqual([201])
    expect(statusOf(/^POST \/v1\/widgets\/notices\/generators\/sdk$/), report).toEqual([201])
    // The second read of u-42 is the browser section's, with a consent token; the third the
    // privacy center's, with the token of its personal link.
    expect(statusOf(/^GET \/v1\/consents\/users\/u-42$/), report).toEqual([200, 200, 200])
    expect(statusOf(/^POST \/v1\/webhooks\/deliveries\/msg_\w+\/replay$/), report).toEqual([200])
    expect(statusOf(/^POST \/v1\/webhooks\/deliveries\/replay$/), report).toEqual([200])
    // The browser section: two guest writes and a signed user's through the public key, and one
    // with the consent token, after the two of the webhook walk-through.
    expect(statusOf(/^POST \/v1\/consents\/tokens$/), report).toEqual([201])
    // And the one of "Consent over time", with a Global Privacy Control signal, and the privacy
    // center's, with its link's token from the page's origin.
    expect(statusOf(/^POST \/v1\/consents\/events$/), report).toEqual([201, 201, 201, 201, 201, 201, 201, 201, 201])
    // Proof of consent: a proof kept with an event, a report of its user and its PDF, a verify
    // whose answer says the log is valid.
    expect(statusOf(/^GET \/v1\/consents\/proofs\/[^/]+\/file$/), report).toEqual([200])
    expect(statusOf(/^POST \/v1\/consents\/proof-reports$/), report).toEqual([201])
    expect(statusOf(/^GET \/v1\/consents\/proof-reports\/[^/]+\/pdf$/), report).toEqual([200])
    expect(statusOf(/^GET \/v1\/consents\/log\/verify$/), report).toEqual([200])
    expect(run.stdout, report).toMatch(/"valid":true,"head":"[0-9a-f]{64}","first_invalid":null/)
    // Consent over time: a ccpa policy of 5 seconds; the user's state given until then, with
    // "sale" refused by its browser's signal; then listed as expired, announced to the webhook
    // that names expiries, and its receipt checked against the server's keys.
    expect(statusOf(/^POST \/v1\/consents\/policies$/), report).toEqual([201])
    expect(run.stdout, report).toMatch(/"organization_user_id":"u-7".*"regulation":"ccpa","consents":\{"purposes":\[\{"id":"analytics","enabled":true\},\{"id":"sale","enabled":false\}\].*"gpc":true,"consent_state":"given","expires_at":"[^"]+"/)
    expect(run.stdout, report).toMatch(/"total":1,"limit":\d+,"skip":0,"data":\[\{"id":"[^"]+","organization_user_id":"u-7","expires_at":"[^"]+"\}\]/)
    expect(statusOf(/^GET \/v1\/consents\/users\/u-7\/receipt$/), report).toEqual([200])
    expect(run.stdout, report).toMatch(/^VALID: signed by key \S+$/m)
    // Privacy center: the page in English, its choices named in French for a French browser, a
    // personal link whose token stays after the #, and the choice it recorded read back.
    expect(statusOf(/^GET \/privacy\/[^/]+$/), report).toEqual([200, 200])
    expect(run.stdout, report).toContain("<h1>Your privacy at Acme</h1>")
    expect(run.stdout, report).toMatch(/<label for="pc-purpose-0">Mesure d&#x27;audience<\/label>|<label for="pc-purpose-0">Mesure d'audience<\/label>/)
    expect(run.stdout, report).toContain('<label for="pc-purpose-1">Publicité</label>')
    expect(run.stdout, report).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/privacy\/[^#\s]+#token=[\w-]+\.[\w-]+\.[\w-]+$/m)
    expect(run.stdout, report).toContain('[{"id":"analytics","enabled":true},{"id":"ads","enabled":false}]')

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
    // The third receiver hears of the expiry, and of nothing else.
    const expiries = [...(run.stdout.split(/receiver: listening on /)[3] ?? "").matchAll(/receiver: ([a-z._]+) (\w+) webhook-id=/g)]
    expect(expiries.map((m) => `${m[1]} ${m[2]}`), report).toEqual(["user.consent_expired ccpa"])

    // What the server recorded for the replayed messages: failed attempts while the receiver was
    // down, then the receiver's 204.
    const access_token = await operatorToken()
    for (const { id } of replayed) {
      const res = await fetch(`${server.url}/v1/webhooks/deliveries/${id}`, { headers: { authorization: `Bearer ${access_token}` } })
      const message = await res.json() as { status: string; attempts: Array<{ status_code: number | null; error: string | null }> }
      expect(message.status).toBe("delivered")
      expect(message.attempts.at(-1)!.status_code).toBe(204)
      const failed = message.attempts.slice(0, -1)
      // The first attempt and one per retry of the walk-through's schedule, at least.
      expect(failed.length).toBeGreaterThanOrEqual(walkEnv!.WEBHOOK_RETRY_SCHEDULE!.split(",").length + 1)
      for (const a of failed) expect([a.status_code, a.error]).toEqual([null, expect.stringMatching(/ECONNREFUSED/)])
    }
  }

  /** Waits until no webhook message is waiting to be sent (pending or delivering), any organization's. */
  const waitForOutbox = async () => {
    const token = await operatorToken()
    const waiting = `${server.url}/v1/webhooks/deliveries?status[$in][]=pending&status[$in][]=delivering&$limit=0`
    for (;;) {
      const res = await fetch(waiting, { headers: { authorization: `Bearer ${token}` } })
      expect(res.status).toBe(200)
      if (((await res.json()) as { total: number }).total === 0) return
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }

  it("ends every answer with a newline, so the next prompt starts on a line of its own", () => {
    // The walk-through's own curl, on the real one: no wrapper on this PATH.
    const definition = /^curl\(\) \{.*\}$/m.exec(walk[0] ?? "")?.[0]
    expect(definition, "Try it defines curl()").toBeDefined()
    const run = spawnSync("bash", ["-c", `${definition}\ncurl -s "$1/healthz"`, "bash", server.url], { encoding: "utf8", env: childEnv({}) })
    expect([run.status, run.stdout]).toEqual([0, '{"status":"ok"}\n'])
  })

  it("runs as pasted, in one shell, against the server it starts", async () => {
    await runOnce()
  }, 90_000)

  it("runs again, as pasted, in a new shell against the same server", async () => {
    // As a reader's second run comes later: the first run's last messages, queued after its
    // receiver went away, are given up by now (retried on the walk-through's short schedule).
    await waitForOutbox()
    await runOnce()
  }, 90_000)
})
