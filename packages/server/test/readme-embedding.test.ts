import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { childEnv, freePort, packageDir, repositoryRoot } from "./built.js"

/**
 * The embedding example of docs/embedding.md, as pasted: the page's one ```js block is
 * written to a module of this package (so the workspace's packages resolve, through tsx) and run
 * from an empty directory, where its relative `./data/consent.db` lands. Only the port is
 * rewritten, to a free one. Then, from outside: the host's own route answers, the API answers
 * under its mount path, and what the example did in-process (an organization, a consent event)
 * reads back over HTTP with the operator key the example created.
 */

const page = fs.readFileSync(path.join(repositoryRoot, "docs", "embedding.md"), "utf8")
const blocks = [...page.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)

const generated = path.join(packageDir, ".generated")
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-readme-embed-"))
let child: ChildProcess | undefined
let file: string | undefined
afterAll(() => {
  // tsx runs the example in a node process of its own: the whole group goes, not only tsx.
  if (child?.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL")
    } catch {
      // Gone already.
    }
  }
  if (file) fs.rmSync(file, { force: true })
  fs.rmSync(dir, { recursive: true, force: true })
})

const eventually = async <A>(probe: () => Promise<A | undefined>, what: string, output: () => string): Promise<A> => {
  const until = Date.now() + 30_000
  for (;;) {
    const got = await probe().catch(() => undefined)
    if (got !== undefined) return got
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${output()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe.skipIf(process.env.CMP_TEST_STORE === "postgres")("the embedding example of docs/embedding.md", () => {
  it("runs as pasted: the host's route, the mounted API, and its in-process calls", async () => {
    expect(blocks, "docs/embedding.md has one js block").toHaveLength(1)
    const port = await freePort()
    const listen = "app.listen(3002)"
    expect(blocks[0]!.split(listen)).toHaveLength(2)
    fs.mkdirSync(generated, { recursive: true })
    file = path.join(generated, `readme-embedding-${process.pid}.mjs`)
    fs.writeFileSync(file, blocks[0]!.replace(listen, `app.listen(${port})`))

    let output = ""
    const tsx = path.join(packageDir, "node_modules", ".bin", "tsx")
    child = spawn(tsx, [file], { cwd: dir, env: childEnv({}), detached: true })
    child.stdout?.on("data", (d) => (output += String(d)))
    child.stderr?.on("data", (d) => (output += String(d)))
    const base = `http://127.0.0.1:${port}`

    const health = await eventually(async () => {
      const r = await fetch(`${base}/health`)
      return r.status === 200 ? r.json() : undefined
    }, "the host's own route", () => output)
    expect(health).toEqual({ ok: true })
    const token = await eventually(async () => {
      const r = await fetch(`${base}/consent-api/v1/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "api-key", key: "admin", secret: "change-me-to-a-long-secret" })
      })
      return r.status === 201 ? ((await r.json()) as { access_token: string }).access_token : undefined
    }, "the operator key's session", () => output)
    const get = async (url: string) => {
      const r = await fetch(`${base}/consent-api${url}`, { headers: { authorization: `Bearer ${token}` } })
      expect(r.status, url).toBe(200)
      return (await r.json()) as { total: number; data: Array<Record<string, unknown>> }
    }
    // The example's in-process calls run after it starts listening: wait for their event.
    const events = await eventually(async () => {
      const page = await get("/v1/consents/events")
      return page.total > 0 ? page : undefined
    }, "the example's consent event", () => output)
    expect(events.data[0]).toMatchObject({ status: "confirmed", user: { organization_user_id: "crm-42" } })
    const orgs = await get("/v1/organizations?name=Acme")
    expect(orgs.data.map((o) => o.id)).toEqual([events.data[0]!.organization_id])
    expect(fs.existsSync(path.join(dir, "data", "consent.db"))).toBe(true)
  }, 60_000)
})
