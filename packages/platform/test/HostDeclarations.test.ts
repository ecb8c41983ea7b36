import { actions, Common, Declarations, defineResource, field, resources, Storage, UrlSigner } from "@cmp/core"
import { sqlite } from "@cmp/store-sqlite"
import { notes, NotesResource, noteLimits, PinNoteAction } from "@cmp/test-support/host-resource"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import { apiMembers } from "../src/Served.js"
import { type ConsentPlatformApi, createPlatform, Forbidden, HostDeclarationError, NotFound, Platform } from "../src/index.js"
import { organizationIn, testPlatform } from "./hostFixture.js"

/**
 * A host's own resources and actions, handed to `createPlatform` with their migrations: in the
 * typed tree beside the registry's, scoped and counted like them, and refused when they would
 * take a place or a table of the platform's. That they are documented beside them is tested
 * where the REST API is (http-fetch's host-and-rest test).
 */

const withNotes = () =>
  createPlatform({ store: sqlite({ filename: ":memory:" }), hashCost: 1024, logLevel: "None", dispatcher: false, ...notes })

let cmp: Awaited<ReturnType<typeof withNotes>>
let plain: ConsentPlatformApi

beforeAll(async () => {
  cmp = await withNotes()
  plain = await testPlatform()
})
afterAll(async () => {
  await cmp?.dispose()
  await plain?.dispose()
})

describe("a host's resources and actions in the host API", () => {
  it("are typed from their declarations, beside the registry's", () => {
    expectTypeOf(cmp.teamNotes.create).parameter(0).toEqualTypeOf<
      { readonly organization_id: string; readonly title: string; readonly pinned?: boolean | undefined }
    >()
    expectTypeOf(cmp.teamNotes.get).returns.resolves.toHaveProperty("pinned").toEqualTypeOf<boolean>()
    expectTypeOf(cmp.teamNotes.pin).parameter(0).toEqualTypeOf<string>()
    expectTypeOf(cmp.forOrganization("o").effect.teamNotes.find).returns.toHaveProperty("pipe")
    expectTypeOf(cmp.consents.events.create).returns.resolves.toHaveProperty("regulation")
    // @ts-expect-error: a note has no such field to filter on
    void cmp.effect.teamNotes.find({ colour: "red" }, { as: cmp.asOperator() })
    // @ts-expect-error: without the host's declarations the tree has no notes
    expect(plain.teamNotes).toBeUndefined()
  })

  it("create, read, find, patch, act on and remove as an organization; another organization sees none of it", async () => {
    const org = await organizationIn(cmp, "Notes A")
    const acme = cmp.forOrganization(org.id)
    const created = await acme.teamNotes.create({ organization_id: org.id, title: "Hello" })
    expect(created).toMatchObject({ title: "Hello", pinned: false, version: 1 })
    expect(created).not.toHaveProperty("organization_id")
    expect(await acme.teamNotes.get(created.id)).toEqual(created)
    expect((await acme.teamNotes.find({ title: "Hello" })).data.map((n) => n.id)).toEqual([created.id])
    expect(await acme.teamNotes.patch(created.id, { title: "Hi" })).toMatchObject({ title: "Hi", version: 2 })
    expect(await acme.teamNotes.pin(created.id)).toMatchObject({ pinned: true, version: 3 })

    const other = cmp.forOrganization((await organizationIn(cmp, "Notes B")).id)
    await expect(other.teamNotes.get(created.id)).rejects.toBeInstanceOf(NotFound)
    await expect(other.teamNotes.pin(created.id)).rejects.toBeInstanceOf(NotFound)
    expect((await other.teamNotes.find({})).total).toBe(0)

    expect((await acme.teamNotes.remove(created.id)).id).toBe(created.id)
    await expect(acme.teamNotes.get(created.id)).rejects.toBeInstanceOf(NotFound)
  })

  it("count against their quota: past its limit, a create is refused with the quota's name", async () => {
    const org = await organizationIn(cmp, "Notes C")
    noteLimits.set(org.id, 1)
    const acme = cmp.forOrganization(org.id)
    await acme.teamNotes.create({ organization_id: org.id, title: "One" })
    const refused = await acme.teamNotes.create({ organization_id: org.id, title: "Two" }).then(() => undefined, (e: unknown) => e)
    expect(refused).toBeInstanceOf(Forbidden)
    expect(refused).toMatchObject({ code: 403, errors: { team_notes: "limit of 1 reached" } })
    expect((await acme.teamNotes.find({})).total).toBe(1)
  })

  it("go with their organization: removing it removes its notes", async () => {
    const org = await organizationIn(cmp, "Notes D")
    const note = await cmp.forOrganization(org.id).teamNotes.create({ organization_id: org.id, title: "Mine" })
    const as = cmp.asOperator()
    await cmp.organizations.remove(org.id, { as })
    await expect(cmp.teamNotes.get(note.id, { as })).rejects.toBeInstanceOf(NotFound)
  })

  it("leave the API object's own members as they are, which no place may take", () => {
    const members = Object.entries(cmp).filter(([key, value]) => typeof value === "function" || key === "runtime" || key === "effect")
    expect(members.map(([key]) => key).sort()).toEqual([...apiMembers].sort())
  })
})

describe("Platform.layerConfig, as the server composes the platform", () => {
  it("serves a host's declarations from the configuration's platform, its tables migrated", async () => {
    const found = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const served = yield* Declarations
      const storage = yield* Storage
      return { paths: served.resources.map((def) => def.path), notes: yield* storage.repository(NotesResource.tableDef).count([]) }
    }).pipe(Effect.provide(Platform.layerConfig({ store: sqlite({ filename: ":memory:" }), dispatcher: false, ...notes }).pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["LOG_LEVEL", "None"]]))))
    )))))
    expect(found.paths).toEqual([...resources.map((def) => def.path), "team-notes"])
    expect(found.notes).toBe(0)
  })
})

describe("what a host may declare", () => {
  const refusal = async (declarations: Parameters<typeof createPlatform>[0]) => {
    const error = await createPlatform({ logLevel: "None", dispatcher: false, ...declarations }).then(() => undefined, (e: unknown) => e)
    expect(error).toBeDefined()
    return String(error)
  }
  const store = () => sqlite({ filename: ":memory:" })

  it("refuses, when the platform is composed, a path or table of the platform's, naming each", async () => {
    const message = await refusal({
      store: store(),
      resources: [
        { ...NotesResource, path: "consents/notes" },
        { ...NotesResource, path: "effect", table: "effect_notes" },
        { ...NotesResource, path: "my-notes", table: "consent_events" },
        { ...NotesResource, path: "Notes", table: "other_notes" }
      ]
    })
    expect(message).toContain(`The resource "consents/notes": "consents" is a place of the platform's`)
    expect(message).toContain(`The resource "effect": "effect" is a place of the platform's`)
    expect(message).toContain(`The resource "my-notes": the table "consent_events" is the platform's`)
    expect(message).toContain(`The resource "Notes": a path is lower-case words`)
  })

  it("refuses two of the host's at one place of the tree, and a migration its number cannot order", async () => {
    const message = await refusal({
      store: store(),
      resources: [NotesResource, NotesResource],
      actions: [{ ...PinNoteAction, name: "find" }, { ...PinNoteAction, name: "add", path: "team-notes" }],
      migrations: { team_notes: [] }
    })
    expect(message).toContain(`The resource "team-notes" is declared twice`)
    expect(message).toContain(`The action "team-notes.find": cmp.teamNotes.find is already the find of the resource "team-notes"`)
    expect(message).toContain(`The action "team-notes.add": POST team-notes is already the create of the resource "team-notes"`)
    expect(message).toContain(`The migration "team_notes"`)
  })

  it("fails Platform.layer with a HostDeclarationError, before the store is opened", async () => {
    const filename = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cmp-host-")), "never.db")
    const platform = Platform.layer({ store: sqlite({ filename }), resources: [{ ...NotesResource, path: "webhooks/notes" }] })
    const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(platform)))
    const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    expect(failure).toBeInstanceOf(HostDeclarationError)
    expect(String(failure)).toContain(`The resource "webhooks/notes": "webhooks" is a place of the platform's`)
    expect(fs.existsSync(filename)).toBe(false)
  })

  it("lists in ports the platform's services only: a port the platform does not provide does not compile", () => {
    class Crm extends Context.Tag("test/Crm")<Crm, { readonly tell: (title: string) => Effect.Effect<void> }>() {}
    const Schemas = {
      output: Schema.Struct({ id: Common.Id, title: Schema.String, ...Common.Audit }),
      createInput: Schema.Struct({ organization_id: Common.Id, title: Schema.String })
    }
    const declared = (path: string) => ({
      name: "memo",
      path,
      table: path.replace(/-/g, "_"),
      ...Schemas,
      methods: ["create" as const],
      ownerField: "organization_id",
      privateFields: { organization_id: field.string }
    })
    const Told = defineResource({
      ...declared("told-memos"),
      ports: [Crm],
      hooks: { afterCreate: (_principal, row) => Effect.flatMap(Crm, (crm) => crm.tell(row.title)) }
    })
    const Signed = defineResource({
      ...declared("signed-memos"),
      ports: [UrlSigner],
      hooks: { afterCreate: (_principal, row) => Effect.flatMap(UrlSigner, (signer) => Effect.asVoid(signer.sign(`https://a.example/${row.id}`, 60))) }
    })
    const compose = () => [
      // @ts-expect-error: Crm is no service of the platform's
      createPlatform({ store: store(), resources: [Told] }),
      createPlatform({ store: store(), resources: [Signed] }),
      createPlatform({ store: store(), resources: [NotesResource], actions: [PinNoteAction] })
    ]
    expect(compose).toBeTypeOf("function")
  })
})
