import { actions, Common, defineResource, field, resources } from "@cmp/core"
import { makeHttpApi } from "@cmp/http-express"
import { Ddl } from "@cmp/store-sql"
import { SqliteStore } from "@cmp/store-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/**
 * Adding a plain resource is its declaration and its migration (docs/architecture.md, "What a
 * new resource or action touches"). This suite takes those steps for a resource that exists only
 * here: a declaration as a file of `core/src/Resources` would hold it, and a migration written
 * with the stores' own description of tables. The registry's list is the one step it cannot take
 * in place; it hands the declaration to the HTTP layer beside the registry's resources instead.
 */

// Step 1: the schemas and the declaration.
const Note = Schema.Struct({ id: Common.Id, title: Schema.String, pinned: Schema.Boolean, ...Common.Audit })
const NoteCreate = Schema.Struct({ organization_id: Common.Id, title: Schema.String, pinned: Schema.optional(Schema.Boolean) })
const NoteUpdate = Schema.Struct({ title: Schema.String, pinned: Schema.Boolean })

const NotesResource = defineResource({
  name: "note",
  path: "team-notes",
  table: "team_notes",
  output: Note,
  createInput: NoteCreate,
  updateInput: NoteUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  privateFields: { organization_id: field.string },
  queryable: ["organization_id"],
  defaults: { pinned: false },
  indexes: [{ name: "team_notes_organization", columns: ["organization_id", "created_at"] }]
})

// Step 2: its migration, as `store-sql/src/migrations/NNNN_team_notes.ts` would hold it.
const { boolean, createIndex, createTable, integer, migration, table, text, timestamp } = Ddl
const teamNotesMigration = migration([
  createTable(table("team_notes", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    title: text().notNull(),
    pinned: boolean().notNull(),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  })),
  createIndex("team_notes", "team_notes_organization", ["organization_id", "created_at"])
])

let api: Awaited<ReturnType<typeof makeHttpApi>>

beforeAll(async () => {
  // The store's own migrations, then this one's.
  const store = Layer.effectDiscard(Effect.orDie(teamNotesMigration)).pipe(
    Layer.provideMerge(SqliteStore.layer({ filename: ":memory:" }))
  )
  api = await makeHttpApi({
    store,
    allowHttp: true,
    hashCost: 1024,
    logLevel: "None",
    dispatcher: false,
    admin: { key: "notes-admin", secret: "notes-admin-secret" },
    // Step 3, in place of the registry's list.
    resources: [...resources, NotesResource]
  })
}, 60_000)
afterAll(() => api?.dispose())

const call = async (method: string, url: string, token?: string, body?: unknown) => {
  const response = await api.handle({
    method,
    url,
    encrypted: false,
    headers: {
      host: "localhost",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {})
    },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = typeof response.body === "string" ? response.body : new TextDecoder().decode(response.body as Uint8Array)
  return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
}

const sessionOf = async (key: string, secret: string) =>
  (await call("POST", "/v1/sessions", undefined, { type: "api-key", key, secret })).body.access_token as string

/** An organization and a client key's token. */
const tenant = async (operator: string, name: string) => {
  const org = (await call("POST", "/v1/organizations", operator, { name })).body
  const key = (await call("POST", "/v1/keys", operator, { organization_id: org.id, name: "client" })).body
  return { org, token: await sessionOf(key.id, key.secret) }
}

describe("a resource that is only its declaration and its migration", () => {
  it("is served with every generic method, scoped to its organization", async () => {
    const operator = await sessionOf("notes-admin", "notes-admin-secret")
    const a = await tenant(operator, "Notes A")
    const b = await tenant(operator, "Notes B")

    const created = await call("POST", "/v1/team-notes", a.token, { organization_id: a.org.id, title: "Hello" })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ title: "Hello", pinned: false, version: 1 })
    expect(created.body).not.toHaveProperty("organization_id")
    const id = created.body.id as string

    expect((await call("GET", `/v1/team-notes/${id}`, a.token)).body).toMatchObject({ id, title: "Hello" })
    const patched = await call("PATCH", `/v1/team-notes/${id}`, a.token, { pinned: true })
    expect(patched.body).toMatchObject({ pinned: true, version: 2 })
    const found = await call("GET", "/v1/team-notes?pinned=true", a.token)
    expect(found.body).toMatchObject({ total: 1, data: [{ id }] })

    // Another organization neither sees nor changes it; bad input is the contract's 400.
    expect((await call("GET", `/v1/team-notes/${id}`, b.token)).status).toBe(404)
    expect((await call("GET", "/v1/team-notes", b.token)).body.total).toBe(0)
    expect((await call("POST", "/v1/team-notes", b.token, { organization_id: a.org.id, title: "Mine" })).status).toBe(403)
    const invalid = await call("POST", "/v1/team-notes", a.token, { organization_id: a.org.id, title: 1 })
    expect(invalid.status).toBe(400)
    expect(invalid.body).toMatchObject({ name: "BadRequest", code: 400, className: "bad-request" })

    expect((await call("DELETE", `/v1/team-notes/${id}`, a.token)).status).toBe(200)
    expect((await call("GET", `/v1/team-notes/${id}`, a.token)).status).toBe(404)
  })

  it("answers a method it does not have with 405 and what it allows", async () => {
    const operator = await sessionOf("notes-admin", "notes-admin-secret")
    const response = await call("PUT", "/v1/team-notes", operator, {})
    expect(response.status).toBe(405)
    expect(response.headers.allow).toBe("GET, HEAD, POST")
  })

  it("is documented: its operations and schemas are in the OpenAPI document", async () => {
    const document = (await call("GET", "/openapi.json")).body
    const operations = Object.values(document.paths as Record<string, Record<string, { operationId: string }>>)
      .flatMap((ops) => Object.values(ops).map((o) => o.operationId))
    for (const method of ["find", "get", "create", "update", "patch", "remove"]) expect(operations).toContain(`team-notes.${method}`)
    expect(document.components.schemas.TeamNotesCreate.properties).toHaveProperty("title")
    // Beside every operation of the registry.
    expect(operations).toContain(`${actions[0]!.place}.${actions[0]!.name}`)
  })
})
