import { createPlatform } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import { notes, noteLimits } from "@cmp/test-support/host-resource"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, expect400, expect403, expect404, expect405, storeKind } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * A resource and an action a host declares of its own (`@cmp/test-support/host-resource`: team
 * notes, their pin action, their table's two migrations in SQL), handed to the server with its
 * other options: served under /v1 and documented like the registry's, scoped to the
 * organization, counted against its quota, and the same through the typed host API, on the
 * store under test.
 */

const { server, op, tenants: [a, b] } = useServer({ ...notes }, { tenants: 2 })

describe("a host's resource over HTTP", () => {
  it("is served with every generic method and its action, scoped to its organization", async () => {
    const created = await a.call("POST", "/v1/team-notes", { body: { organization_id: a.org.id, title: "Hello" } })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({ title: "Hello", pinned: false, version: 1 })
    expect(created.body).not.toHaveProperty("organization_id")
    const id = created.body.id as string

    expect((await a.call("GET", `/v1/team-notes/${id}`)).body).toEqual(created.body)
    const patched = await a.call("PATCH", `/v1/team-notes/${id}`, { body: { title: "Hi" } })
    expect(patched.body).toMatchObject({ title: "Hi", version: 2 })
    const pinned = await a.call("POST", `/v1/team-notes/${id}/pin`)
    expect(pinned.status, pinned.text).toBe(200)
    expect(pinned.body).toMatchObject({ pinned: true, version: 3 })
    const replaced = await a.call("PUT", `/v1/team-notes/${id}`, { body: { title: "Again", pinned: false } })
    expect(replaced.body).toMatchObject({ title: "Again", pinned: false, version: 4 })
    expect((await a.call("GET", "/v1/team-notes?title=Again")).body).toMatchObject({ total: 1, data: [{ id }] })

    // Another organization's key neither sees nor changes it.
    expect404(await b.call("GET", `/v1/team-notes/${id}`))
    expect404(await b.call("PATCH", `/v1/team-notes/${id}`, { body: { title: "Mine" } }))
    expect404(await b.call("POST", `/v1/team-notes/${id}/pin`))
    expect404(await b.call("DELETE", `/v1/team-notes/${id}`))
    expect((await b.call("GET", "/v1/team-notes")).body.total).toBe(0)
    expect403(await b.call("POST", "/v1/team-notes", { body: { organization_id: a.org.id, title: "Mine" } }))
    const invalid = await a.call("POST", "/v1/team-notes", { body: { organization_id: a.org.id, title: 1 } })
    expect400(invalid)
    expect(invalid.body.errors).toHaveProperty("title")

    expect((await a.call("DELETE", `/v1/team-notes/${id}`)).status).toBe(200)
    expect404(await a.call("GET", `/v1/team-notes/${id}`))
    // The operator sees every organization's, as for the registry's resources.
    const theirs = await b.call("POST", "/v1/team-notes", { body: { organization_id: b.org.id, title: "B's" } })
    expect((await op.call("GET", `/v1/team-notes/${theirs.body.id}`)).body).toMatchObject({ title: "B's" })
  })

  it("answers a method it does not have with 405 and what it allows", async () => {
    const r = await op.call("PUT", "/v1/team-notes", { body: {} })
    expect405(r)
    expect(r.headers.get("allow")).toBe("GET, HEAD, POST")
  })

  it("counts creates against its own quota: past the limit, 403 naming it", async () => {
    const t = await op.tenant()
    noteLimits.set(t.org.id, 2)
    const create = (title: string) => call(server.url, "POST", "/v1/team-notes", { token: t.token, body: { organization_id: t.org.id, title } })
    expect((await create("One")).status).toBe(201)
    expect((await create("Two")).status).toBe(201)
    const refused = await create("Three")
    expect403(refused)
    expect(refused.body.errors).toEqual({ team_notes: "limit of 2 reached" })
    expect((await call(server.url, "GET", "/v1/team-notes", { token: t.token })).body.total).toBe(2)
  })

  it("is documented: its operations and schemas are in the OpenAPI document, beside the registry's", async () => {
    const document = (await call(server.url, "GET", "/openapi.json")).body
    const operations = Object.values(document.paths as Record<string, Record<string, { operationId: string }>>)
      .flatMap((ops) => Object.values(ops).map((o) => o.operationId))
    for (const method of ["find", "get", "create", "update", "patch", "remove", "pin"]) expect(operations).toContain(`team-notes.${method}`)
    expect(operations).toContain("consents/events.create")
    expect(document.paths["/v1/team-notes/{id}/pin"].post.security).toEqual([{ bearer: [] }])
    expect(document.components.schemas.TeamNotesCreate.properties).toHaveProperty("title")
  })
})

describe("a host's resource through the typed host API", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-host-resource-"))
  const database = storeKind === "postgres" ? createTestDatabase() : undefined
  /** A store on one database, opened again by each platform. */
  const store = async () =>
    database === undefined
      ? SqliteStore.layer({ filename: path.join(dir, "notes.db") })
      : PgStore.layer({ url: (await database).url, maxConnections: (await database).maxConnections })
  const platform = async () => createPlatform({ store: await store(), hashCost: 1024, logLevel: "None", dispatcher: false, ...notes })
  afterAll(async () => {
    await (await database)?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("creates, reads, finds, patches, pins and removes as an organization; another sees none; the quota holds", async () => {
    const cmp = await platform()
    try {
      const as = cmp.asOperator()
      const org = await cmp.organizations.create({ name: "Notes A" }, { as })
      const other = cmp.forOrganization((await cmp.organizations.create({ name: "Notes B" }, { as })).id)
      const acme = cmp.forOrganization(org.id)
      const note = await acme.teamNotes.create({ organization_id: org.id, title: "Hello" })
      expect(await acme.teamNotes.get(note.id)).toEqual(note)
      expect((await acme.teamNotes.find({ pinned: false })).data.map((n) => n.id)).toEqual([note.id])
      expect(await acme.teamNotes.patch(note.id, { title: "Hi" })).toMatchObject({ title: "Hi", version: 2 })
      expect(await acme.teamNotes.pin(note.id)).toMatchObject({ pinned: true, version: 3 })
      await expect(other.teamNotes.get(note.id)).rejects.toMatchObject({ code: 404, name: "NotFound" })
      expect((await other.teamNotes.find({})).total).toBe(0)

      noteLimits.set(org.id, 1)
      await expect(acme.teamNotes.create({ organization_id: org.id, title: "Two" })).rejects.toMatchObject({
        code: 403,
        errors: { team_notes: "limit of 1 reached" }
      })
      noteLimits.delete(org.id)
      expect((await acme.teamNotes.remove(note.id)).id).toBe(note.id)
      await expect(acme.teamNotes.get(note.id)).rejects.toMatchObject({ code: 404 })
      await acme.teamNotes.create({ organization_id: org.id, title: "Kept" })
    } finally {
      await cmp.dispose()
    }
  }, 60_000)

  it("starts again on the same database: the host's migrations ran once, its rows are there", async () => {
    const cmp = await platform()
    try {
      const page = await cmp.teamNotes.find({ title: "Kept" }, { as: cmp.asOperator() })
      expect(page.total).toBe(1)
    } finally {
      await cmp.dispose()
    }
  }, 60_000)
})
