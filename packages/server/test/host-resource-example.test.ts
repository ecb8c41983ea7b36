import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { childEnv, freePort, packageDir, repositoryRoot } from "./built.js"

/**
 * `examples/host-resource`, as `pnpm --filter @cmp/examples host-resource` runs it, from an empty
 * directory (its SQLite file lands there) on a free port: the preference it made in-process reads
 * back over HTTP, its operations are documented, another organization's key does not reach it, and
 * the table's unique member and channel holds.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-host-resource-example-"))
let example: ChildProcess | undefined
afterAll(() => {
  // tsx runs the example in a node process of its own: the whole group goes.
  if (example?.pid !== undefined) {
    try {
      process.kill(-example.pid, "SIGKILL")
    } catch {
      // Gone already.
    }
  }
  fs.rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(process.env.CMP_TEST_STORE === "postgres")("the host-resource example", () => {
  it("serves the host's loyalty preferences beside the platform's resources", async () => {
    const port = await freePort()
    let output = ""
    example = spawn(path.join(packageDir, "node_modules", ".bin", "tsx"), [path.join(repositoryRoot, "examples", "host-resource", "server.ts")], {
      cwd: dir,
      env: childEnv({ PORT: String(port), HOST: "127.0.0.1" }),
      detached: true
    })
    await new Promise<void>((resolve, reject) => {
      example!.stdout!.on("data", (d) => {
        output += String(d)
        if (output.includes("API on ")) resolve()
      })
      example!.stderr!.on("data", (d) => (output += String(d)))
      example!.once("exit", (code) => reject(new Error(`the example exited (${code}): ${output}`)))
    })
    expect(output).toContain("member-1 hears about the loyalty programme by email: true")
    const api = async (method: string, url: string, token?: string, body?: unknown) => {
      const r = await fetch(`http://127.0.0.1:${port}/consent-api${url}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
      return { status: r.status, body: await r.json() as any }
    }
    const session = async (key: string, secret: string) => (await api("POST", "/v1/sessions", undefined, { type: "api-key", key, secret })).body.access_token as string
    const operator = await session("admin", "change-me-to-a-long-secret")

    const found = await api("GET", "/v1/loyalty-preferences", operator)
    expect(found.status).toBe(200)
    expect(found.body.data).toMatchObject([{ member_id: "member-1", channel: "email", opted_in: true }])
    const [preference] = found.body.data
    const shop = preference.organization_id as string
    const duplicate = await api("POST", "/v1/loyalty-preferences", operator, { organization_id: shop, member_id: "member-1", channel: "email" })
    expect(duplicate.status).toBe(409)

    const document = (await api("GET", "/openapi.json")).body
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(["/v1/loyalty-preferences", "/v1/loyalty-preferences/{id}"]))

    const other = (await api("POST", "/v1/organizations", operator, { name: "Another Shop" })).body
    const key = (await api("POST", "/v1/keys", operator, { organization_id: other.id, name: "backend" })).body
    const theirs = await session(key.id, key.secret)
    expect((await api("GET", `/v1/loyalty-preferences/${preference.id}`, theirs)).status).toBe(404)
    expect((await api("GET", "/v1/loyalty-preferences", theirs)).body.total).toBe(0)
  }, 60_000)
})
