import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/**
 * The real commands of the README, as child processes on a temporary SQLite file: what
 * `pnpm start`, `pnpm bootstrap` and `pnpm worker` run, the bundle `build.mjs` writes.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-cli-"))
// The SQLite default: a DATABASE_URL of the CI machine must not switch these runs to PostgreSQL.
const { DATABASE_URL: _unused, ...inherited } = process.env
const env = { ...inherited, SQLITE_PATH: path.join(dir, "consent.db"), ALLOW_HTTP: "true", LOG_LEVEL: "Warning" }
const packageDir = path.join(import.meta.dirname, "..")
const main = path.join(packageDir, "dist", "main.mjs")
const children: Array<ChildProcess> = []

beforeAll(async () => {
  const built = await new Promise<number>((resolve) => {
    execFile(process.execPath, [path.join(packageDir, "build.mjs")], (error) => resolve(error ? 1 : 0))
  })
  expect(built).toBe(0)
}, 60_000)

afterAll(() => {
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
})
