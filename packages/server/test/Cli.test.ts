import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { childEnv, killLeftovers, startServer } from "./built.js"

/**
 * The real commands of the README, as child processes on a temporary SQLite file: what
 * `pnpm start`, `pnpm bootstrap` and `pnpm worker` run, the bundle `build.mjs` writes (once per
 * test run, `build-dist.ts`).
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-cli-"))
// The SQLite default: a DATABASE_URL of the CI machine must not switch these runs to PostgreSQL.
const { DATABASE_URL: _unused, ...inherited } = process.env
const env = { ...inherited, SQLITE_PATH: path.join(dir, "consent.db"), ALLOW_HTTP: "true", LOG_LEVEL: "Warning" }
const packageDir = path.join(import.meta.dirname, "..")
const main = path.join(packageDir, "dist", "main.mjs")
const children: Array<ChildProcess> = []

afterAll(() => {
  killLeftovers()
  for (const c of children) c.kill("SIGTERM")
  fs.rmSync(dir, { recursive: true, force: true })
})

const run = (args: Array<string>, extra: Record<string, string> = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [main, ...args], { env: { ...env, ...extra } }, (error, stdout, stderr) => {
      resolve({ code: error ? (error as { code?: number }).code ?? 1 : 0, stdout, stderr })
    })
  })

const start = (extra: Record<string, string>) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [main], { env: { ...env, ...extra } })
    children.push(child)
    let out = ""
    child.stdout.on("data", (d) => {
      out += String(d)
      const m = /"url":"([^"]+)"/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.on("exit", (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })


/** JSON requests to a server the test started, each expected to succeed. */
const callerOf = (url: string) => async (method: string, route: string, token: string | undefined, body?: unknown) => {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const answer = await res.json() as Record<string, any>
  expect(res.status, JSON.stringify(answer)).toBeLessThan(300)
  return answer
}

/** An organization with the consents API, made by the operator. */
const consentsOrganization = async (call: ReturnType<typeof callerOf>, op: string, name: string) => {
  const org = await call("POST", "/v1/organizations", op, { name })
  const flags = (await call("GET", `/v1/premium-features?organization_id=${org.id}`, op)).data[0]
  await call("PATCH", `/v1/premium-features/${flags.id}`, op, { consents_api: true })
  return org
}
describe("command line", () => {
  it("bootstrap prints a new operator key whose session works on the started server", async () => {
    const boot = await run(["bootstrap"])
    expect(boot.code).toBe(0)
    const created = JSON.parse(boot.stdout.trim())
    expect(created.key).toMatch(/\S+/)
    expect(created.secret).toMatch(/^sk_/)
    expect(created.organization_id).toBe("operator")

    const url = await start({ PORT: "0" })
    const session = await fetch(`${url}/v1/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "api-key", key: created.key, secret: created.secret })
    })
    expect(session.status).toBe(201)
    const { access_token } = await session.json() as { access_token: string }
    const keys = await fetch(`${url}/v1/keys?is_internal=true`, { headers: { authorization: `Bearer ${access_token}` } })
    expect(keys.status).toBe(200)
    const page = await keys.json() as { data: Array<{ id: string }> }
    expect(page.data.map((k) => k.id)).toContain(created.key)
    // The bundle still finds the assets of the offline API docs.
    const docs = await fetch(`${url}/docs/`)
    expect(docs.status).toBe(200)
    expect(await docs.text()).toMatch(/swagger/i)
  }, 60_000)

  it("a configuration mistake exits non-zero with one clear line", async () => {
    const r = await run([], { PORT: "not-a-port" })
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/Configuration error: PORT must be an integer/)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  }, 30_000)

  it.each([["serve"], ["worker"]])("%s names every variable at fault in one configuration error, each once", async (command) => {
    const r = await run([command], { PORT: "abc", JWT_SECRET: "short", ADMIN_API_SECRET: "short", WEBHOOK_RETRY_SCHEDULE: "x" })
    expect(r.code).toBe(1)
    const lines = r.stderr.trim().split("\n")
    expect(lines, r.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(/^Configuration error: /)
    for (const name of ["PORT", "JWT_SECRET", "ADMIN_API_SECRET", "WEBHOOK_RETRY_SCHEDULE"]) {
      expect(lines[0]!.split(new RegExp(`\\b${name}\\b`)).length, `${name} once in: ${lines[0]}`).toBe(2)
    }
  }, 30_000)

  it("a port already taken is named with what to do, not as Node's EADDRINUSE", async () => {
    const taken = new URL(await start({ PORT: "0" })).port
    const r = await run([], { PORT: taken })
    expect(r.code).toBe(1)
    expect(r.stderr.trim()).toBe(
      `Cannot listen on 127.0.0.1:${taken}: the address is in use, most likely by a server started earlier; stop it, or set PORT (or HOST) to another`
    )
  }, 30_000)

  it("a changed ADMIN_API_SECRET is not taken: the start says so, never showing a secret, and the first secret still opens a session", async () => {
    const first = "first-secret-0123456789"
    const changed = "changed-secret-0123456789"
    const own = childEnv({ SQLITE_PATH: path.join(dir, "changed", "consent.db"), ALLOW_HTTP: "true", LOG_LEVEL: "Warning", ADMIN_API_KEY: "admin" })
    const warning = /ADMIN_API_SECRET does not open the operator key 'admin'/
    const session = (url: string, secret: string) =>
      fetch(`${url}/v1/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "api-key", key: "admin", secret })
      }).then(async (res) => ({ status: res.status, body: await res.json() as { message?: string } }))
    const startStop = async (secret: string, check: (url: string) => Promise<void>) => {
      const server = await startServer({ ...own, ADMIN_API_SECRET: secret })
      try {
        await check(server.url)
      } finally {
        server.child.kill("SIGTERM")
        await server.exited
      }
      return server.output()
    }

    expect(await startStop(first, async () => {})).not.toMatch(warning)
    const output = await startStop(changed, async (url) => {
      const refused = await session(url, changed)
      expect(refused.status).toBe(400)
      expect(refused.body.message).toBe("Invalid login")
      expect((await session(url, first)).status).toBe(201)
    })
    const said = output.split("\n").filter((l) => warning.test(l)).map((l) => JSON.parse(l) as { message: string; logLevel: string })
    expect(said).toHaveLength(1)
    expect(said[0]!.logLevel).toBe("WARN")
    expect(said[0]!.message).toMatch(/Start with the first secret; in development, start with a fresh database/)
    expect(output).not.toContain(changed)
    expect(output).not.toContain(first)
    // Started again with the first secret, it says nothing of it.
    expect(await startStop(first, async () => {})).not.toMatch(warning)
  }, 60_000)

  it("REQUIRE_EXTERNAL_KEYS=true without JWT_SECRET and ENCRYPTION_KEY refuses to start, creating no database", async () => {
    const file = path.join(dir, "refused", "consent.db")
    const r = await run([], { PORT: "0", SQLITE_PATH: file, REQUIRE_EXTERNAL_KEYS: "true", JWT_SECRET: "j".repeat(40) })
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/Configuration error: REQUIRE_EXTERNAL_KEYS is true but ENCRYPTION_KEY is not set/)
    expect(r.stderr).not.toMatch(/\n\s+at /)
    expect(fs.existsSync(file)).toBe(false)
  }, 30_000)

  it("a start with keys kept in the database and no mailer warns of both, never showing a key", async () => {
    const child = spawn(process.execPath, [main], { env: { ...env, PORT: "0", LOG_LEVEL: "Warning", JWT_SECRET: "s".repeat(40) } })
    children.push(child)
    const out = await new Promise<string>((resolve, reject) => {
      let text = ""
      child.stdout.on("data", (d) => {
        text += String(d)
        if (text.includes("\"listening\"")) resolve(text)
      })
      let errors = ""
      child.stderr.on("data", (d) => (errors += String(d)))
      child.on("exit", (code) => reject(new Error(`server exited with ${code}: ${text}${errors}`)))
    })
    child.kill("SIGTERM")
    const warnings = out.split("\n").filter((l) => l.includes("\"WARN\"")).map((l) => JSON.parse(l).message as string)
    expect(warnings.join("\n")).toMatch(/ENCRYPTION_KEY not set: .*copy of the database .*sign operator tokens and open every sealed secret/)
    expect(warnings.join("\n")).not.toMatch(/JWT_SECRET not set/)
    expect(warnings.join("\n")).toMatch(/SMTP_URL and MAIL_FROM not set: invitation tokens are returned to the inviter/)
    expect(out).not.toContain("s".repeat(40))
  }, 30_000)

  it("verify-log checks an organization's consent log straight from the database: 0 when valid, 1 when a row was changed, 2 without an organization", async () => {
    const file = path.join(dir, "verify", "consent.db")
    const own = { SQLITE_PATH: file, ADMIN_API_KEY: "admin", ADMIN_API_SECRET: "verify-secret-0123456789" }
    const url = await start({ PORT: "0", ...own })
    const call = callerOf(url)
    const op = (await call("POST", "/v1/sessions", undefined, { type: "api-key", key: "admin", secret: own.ADMIN_API_SECRET })).access_token
    const org = await consentsOrganization(call, op, "verify-log")
    const consents = { purposes: [{ id: "analytics", enabled: true }] }
    const event = await call("POST", "/v1/consents/events", op, { organization_id: org.id, user: { organization_user_id: "u-1" }, consents })
    await call("POST", "/v1/consents/events", op, { organization_id: org.id, user: { organization_user_id: "u-2" }, consents })
    const served = await call("GET", `/v1/consents/log/verify?organization_id=${org.id}`, op)
    expect(served).toMatchObject({ valid: true, first_invalid: null })

    const valid = await run(["verify-log", "--organization", org.id], own)
    expect(valid.code, valid.stderr).toBe(0)
    expect(JSON.parse(valid.stdout)).toEqual(served)

    // The store's own driver, as an auditor's script would open the file.
    const Database = createRequire(import.meta.url)("better-sqlite3") as new (filename: string) => {
      prepare: (sql: string) => { run: (...values: Array<unknown>) => unknown }
      close: () => void
    }
    const db = new Database(file)
    db.prepare("UPDATE consent_events SET consents = ? WHERE organization_id = ? AND id = ?").run(JSON.stringify({ purposes: [] }), org.id, event.id)
    db.close()
    const invalid = await run(["verify-log", `--organization=${org.id}`], own)
    expect(invalid.code, invalid.stderr).toBe(1)
    expect(JSON.parse(invalid.stdout)).toMatchObject({ valid: false, first_invalid: { reason: "row", table: "consent_events", id: event.id } })

    const asked = await run(["verify-log"], own)
    expect(asked.code).toBe(2)
    expect(asked.stderr).toMatch(/usage: verify-log --organization/)
  }, 60_000)

  it("verify-receipt checks a receipt against the served keys or a key file: 0 when valid, 1 when tampered with, 2 when asked wrongly; rotate-receipt-key keeps it valid", async () => {
    const file = path.join(dir, "receipts", "consent.db")
    const own = { SQLITE_PATH: file, ADMIN_API_KEY: "admin", ADMIN_API_SECRET: "receipt-secret-0123456789" }
    const url = await start({ PORT: "0", ...own })
    const call = callerOf(url)
    const op = (await call("POST", "/v1/sessions", undefined, { type: "api-key", key: "admin", secret: own.ADMIN_API_SECRET })).access_token
    const org = await consentsOrganization(call, op, "Receipts Ltd")
    const consents = { purposes: [{ id: "analytics", enabled: true }], vendors: { enabled: ["v1"] } }
    const event = await call("POST", "/v1/consents/events", op, { organization_id: org.id, user: { organization_user_id: "u-1" }, consents })
    const answer = await call("GET", `/v1/consents/users/${event.user.id}/receipt?organization_id=${org.id}`, op)
    const receiptFile = path.join(dir, "receipts", "receipt.json")
    fs.writeFileSync(receiptFile, JSON.stringify(answer))

    const served = await run(["verify-receipt", receiptFile, "--server", url], own)
    expect(served.code, served.stderr).toBe(0)
    const kid = JSON.parse(Buffer.from(answer.jws.split(".")[0], "base64url").toString()).kid
    expect(served.stdout).toContain(`VALID: signed by key ${kid}`)
    for (const said of ["Controller: Receipts Ltd", `Person: ${event.user.id} (the organization's user u-1)`, "Jurisdiction: gdpr",
      "State: given, no expiry known", "analytics: given (consent)", "consent given: v1", `${event.id}: given, by the controller through an API credential`]) {
      expect(served.stdout).toContain(said)
    }
    // The bare JWS, against a key file.
    const keysFile = path.join(dir, "receipts", "jwks.json")
    fs.writeFileSync(keysFile, JSON.stringify(await call("GET", "/v1/consents/receipts/jwks", undefined)))
    const jwsFile = path.join(dir, "receipts", "receipt.jws")
    fs.writeFileSync(jwsFile, `${answer.jws}\n`)
    expect((await run(["verify-receipt", jwsFile, "--jwks", keysFile], own)).code).toBe(0)

    // The receipt's JSON changed beside its JWS.
    const tampered = path.join(dir, "receipts", "tampered.json")
    fs.writeFileSync(tampered, JSON.stringify({ ...answer, receipt: { ...answer.receipt, consent_state: "refused" } }))
    const refused = await run(["verify-receipt", tampered, `--jwks-url=${url}/v1/consents/receipts/jwks`], own)
    expect(refused.code, refused.stdout).toBe(1)
    expect(refused.stdout).toMatch(/^INVALID: the receipt differs from what the JWS signs/)
    // The signed payload changed.
    const [header, payload, signature] = answer.jws.split(".")
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), consent_state: "refused" })).toString("base64url")
    fs.writeFileSync(tampered, JSON.stringify({ jws: `${header}.${forged}.${signature}` }))
    const forgedRun = await run(["verify-receipt", tampered, "--jwks", keysFile], own)
    expect(forgedRun.code).toBe(1)
    expect(forgedRun.stdout).toMatch(/^INVALID: the signature does not verify/)

    for (const args of [["verify-receipt"], ["verify-receipt", receiptFile], ["verify-receipt", receiptFile, "--jwks", keysFile, "--server", url]]) {
      const asked = await run(args, own)
      expect(asked.code, args.join(" ")).toBe(2)
      expect(asked.stderr).toMatch(/usage: verify-receipt FILE/)
    }

    // A rotation: the receipt made before still verifies against the keys served after it.
    const rotated = await run(["rotate-receipt-key"], own)
    expect(rotated.code, rotated.stderr).toBe(0)
    expect(JSON.parse(rotated.stdout)).toMatchObject({ retired: [kid] })
    const after = await run(["verify-receipt", receiptFile, "--server", url], own)
    expect(after.code, after.stdout).toBe(0)
  }, 90_000)

  it("worker starts on the same configuration and says so", async () => {
    const child = spawn(process.execPath, [main, "worker"], { env })
    children.push(child)
    // The start-up warnings come first, one JSON line each.
    const line = await new Promise<string>((resolve, reject) => {
      let out = ""
      child.stdout.on("data", (d) => {
        out += String(d)
        const found = out.split("\n").find((l) => l.includes("delivering webhooks"))
        if (found) resolve(found)
      })
      child.on("exit", (code) => reject(new Error(`worker exited with ${code}: ${out}`)))
    })
    expect(JSON.parse(line.trim())).toMatchObject({ message: "delivering webhooks", database: "sqlite" })
    child.kill("SIGTERM")
  }, 30_000)
})

describe("what each command loads", () => {
  interface Meta {
    readonly outputs: Record<string, {
      readonly imports: ReadonlyArray<{ readonly path: string; readonly kind: string }>
      readonly inputs: Record<string, unknown>
    }>
  }
  const meta = (): Meta => JSON.parse(fs.readFileSync(path.join(packageDir, "dist", "meta.json"), "utf8"))

  /** The sources an output and everything it imports statically hold: what running it evaluates. */
  const loaded = (m: Meta, start: string): Set<string> => {
    const seen = new Set<string>()
    const inputs = new Set<string>()
    const visit = (output: string) => {
      if (seen.has(output)) return
      seen.add(output)
      const o = m.outputs[output]
      if (!o) return
      for (const input of Object.keys(o.inputs)) inputs.add(input)
      for (const i of o.imports) if (i.kind === "import-statement" && !i.path.startsWith("node:")) visit(i.path)
    }
    visit("dist/main.mjs")
    visit(start)
    return inputs
  }
  const chunk = (m: Meta, name: string) => {
    const found = Object.keys(m.outputs).find((o) => new RegExp(`^dist/chunks/${name}-[A-Z0-9]+\\.mjs$`).test(o))
    expect(found, `a chunk for ${name}`).toBeDefined()
    return found!
  }
  // Paths are relative to this package: `../http/src/…`, `../../node_modules/.pnpm/express@…`.
  const http = /node_modules\/(\.pnpm\/)?(express|body-parser|router)[@/]|(^|\/)http(-express)?\/src\//

  it("worker and bootstrap never load the HTTP layer or Express; serve does", () => {
    const m = meta()
    for (const command of ["Worker", "Bootstrap"]) {
      const sources = [...loaded(m, chunk(m, command))]
      expect(sources.filter((s) => http.test(s)), command).toEqual([])
      expect(sources.some((s) => /(^|\/)platform\/src\//.test(s)), command).toBe(true)
    }
    const serve = [...loaded(m, chunk(m, "Serve"))]
    expect(serve.some((s) => /node_modules\/(\.pnpm\/)?express@/.test(s))).toBe(true)
    expect(serve.some((s) => /(^|\/)http\/src\/Handler\.ts$/.test(s))).toBe(true)
  })
})
