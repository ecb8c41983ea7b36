import {
  ApiKeysResource,
  ApiUsage,
  authenticate,
  bootstrap,
  type Condition,
  createSession,
  eq,
  OrganizationsResource,
  PremiumFeaturesResource,
  type Principal,
  QuotasResource,
  ResourceService as RS,
  type Row,
  SecretsResource,
  type SettingsShape,
  setPersonPassword,
  Storage,
  type TableDef,
  Tables,
  type TokenClaims,
  UsageStore,
  type DomainError,
  rotateKeySecret
} from "@cmp/core"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { engineLayer, type EngineStore } from "./EngineServices.js"

/**
 * The generic use-cases of core's resource service (scope, input rules, versions, quotas,
 * hooks, sessions, API usage) on a real store, a fresh database per test: each store package
 * registers the suite on itself, as it does the store contract, because core cannot depend on
 * a store. What a use-case stored is read back through the storage ports, never from the
 * store's insides. Find queries are written as the HTTP adapter hands them over: nested
 * objects of strings.
 */

// ---------------------------------------------------------------- helpers

const T0 = Date.parse("2026-03-10T12:00:00.000Z")
const iso = (ms: number) => new Date(ms).toISOString()

const login = (key: string, secret: string) =>
  Effect.gen(function*() {
    const session = yield* createSession({ type: "api-key", key, secret })
    return (yield* authenticate(session.access_token)) as Principal
  })

const loginPerson = (email: string, password: string) =>
  Effect.gen(function*() {
    const session = yield* createSession({ type: "email", key: email, secret: password })
    return (yield* authenticate(session.access_token)) as Principal
  })

/** The operator, two organizations with one key each, and their clients. */
const world = (startAt = T0) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(startAt)
    yield* bootstrap({ key: "admin", secret: "admin-secret" })
    const operator = yield* login("admin", "admin-secret")
    const orgA = (yield* RS.create(OrganizationsResource, operator, { name: "Org A" })).id as string
    const orgB = (yield* RS.create(OrganizationsResource, operator, { name: "Org B" })).id as string
    const keyA = yield* RS.create(ApiKeysResource, operator, { organization_id: orgA, name: "key a", description: "d" })
    const keyB = yield* RS.create(ApiKeysResource, operator, { organization_id: orgB, name: "key b" })
    const clientA = yield* login(keyA.id as string, keyA.secret as string)
    const clientB = yield* login(keyB.id as string, keyB.secret as string)
    return { operator, orgA, orgB, keyA, keyB, keyAId: keyA.id as string, keyBId: keyB.id as string, clientA, clientB }
  })

/** The stored rows of a table that match every condition, in the table's default order. */
const rowsOf = (table: TableDef, ...where: Array<Condition>) =>
  Effect.flatMap(Storage, (s) => s.repository(table).find({ where, sort: [], limit: 1000, skip: 0 })).pipe(
    Effect.map((page) => page.data)
  )

/** The one row of a per-organization table (quotas, premium features). */
const rowOf = (table: TableDef, organizationId: string) =>
  Effect.map(rowsOf(table, eq("organization_id", organizationId)), (rows) => rows[0])

/** The stored row with this id, as the store holds it (private columns included). */
const storedRow = (table: TableDef, id: string) => Effect.flatMap(Storage, (s) => s.repository(table).get(id))

const quotaOf = (organizationId: string) => rowOf(Tables.quotas, organizationId)

const ids = (page: { data: ReadonlyArray<Row> }) => page.data.map((r) => r.id)

export const resourceServiceSuite = (name: string, makeStore: () => Layer.Layer<EngineStore>) =>
  describe(`the resource service on ${name}`, () => {
    /** A fresh, empty world for each test that provides it. */
    const testLayer = (settings: Partial<SettingsShape> = {}) => engineLayer(makeStore(), settings)

    // ---------------------------------------------------------------- principals

    describe("principals from sessions", () => {
      it.effect("the bootstrap key is the operator; an org key is a client of that org", () =>
        Effect.gen(function*() {
          const w = yield* world()
          expect(w.operator).toEqual({ _tag: "Operator", keyId: "admin", organizationId: "operator" })
          expect(w.clientA).toEqual({ _tag: "Client", keyId: w.keyAId, organizationId: w.orgA })
          expect(w.clientB).toEqual({ _tag: "Client", keyId: w.keyBId, organizationId: w.orgB })
        }).pipe(Effect.provide(testLayer())))

      it.effect("an internal key of another organization is a client, not the operator", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const internal = yield* RS.create(ApiKeysResource, w.operator, {
            organization_id: w.orgA,
            name: "managed",
            is_internal: true
          })
          const p = yield* login(internal.id as string, internal.secret as string)
          expect(p).toEqual({ _tag: "Client", keyId: internal.id, organizationId: w.orgA })
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- organization scope

    describe("organization scope", () => {
      it.effect("a client of org A cannot get, patch, update or remove org B's key (NotFound)", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const get = yield* Effect.flip(RS.get(ApiKeysResource, w.clientA, w.keyBId))
          expect(get._tag).toBe("NotFound")
          expect(get.message).toBe(`No API key found for id '${w.keyBId}'`)
          expect((yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.keyBId, { name: "x" })))._tag).toBe("NotFound")
          expect(
            (yield* Effect.flip(RS.update(ApiKeysResource, w.clientA, w.keyBId, { name: "x", enabled: false })))._tag
          ).toBe("NotFound")
          expect((yield* Effect.flip(RS.remove(ApiKeysResource, w.clientA, w.keyBId)))._tag).toBe("NotFound")
          // Same answer as an id that does not exist at all.
          const missing = yield* Effect.flip(RS.get(ApiKeysResource, w.clientA, "no-such-id"))
          expect(missing._tag).toBe("NotFound")
          // Untouched.
          const b = yield* RS.get(ApiKeysResource, w.clientB, w.keyBId)
          expect(b.name).toBe("key b")
          expect(b.version).toBe(1)
        }).pipe(Effect.provide(testLayer())))

      it.effect("a client of org A cannot create in org B (Forbidden), nor in an unknown org", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgB, name: "intruder" }))
          expect(e._tag).toBe("Forbidden")
          const e2 = yield* Effect.flip(RS.create(SecretsResource, w.clientA, { organization_id: w.orgB, name: "s" }))
          expect(e2._tag).toBe("Forbidden")
          // An organization that does not exist is not revealed as such to a client.
          const e3 = yield* Effect.flip(RS.create(ApiKeysResource, w.clientA, { organization_id: "nope", name: "k" }))
          expect(e3._tag).toBe("Forbidden")
          expect((yield* rowsOf(Tables.keys, eq("organization_id", w.orgB))).map((k) => k.name)).toEqual(["key b"])
        }).pipe(Effect.provide(testLayer())))

      it.effect("the operator creating in an unknown organization gets InvalidInput naming organization_id", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.create(ApiKeysResource, w.operator, { organization_id: "nope", name: "k" }))
          expect(e._tag).toBe("InvalidInput")
          expect(e._tag === "InvalidInput" && e.errors).toEqual({ organization_id: "is not an existing organization" })
        }).pipe(Effect.provide(testLayer())))

      it.effect("find with organization_id of another org is Forbidden, in any form", () =>
        Effect.gen(function*() {
          const w = yield* world()
          for (
            const query of [
              { organization_id: w.orgB },
              { organization_id: { $in: [w.orgA, w.orgB] } },
              { $or: [{ organization_id: w.orgB }, { name: "x" }] },
              { organization_id: "null" }
            ]
          ) {
            const e = yield* Effect.flip(RS.find(ApiKeysResource, w.clientA, query))
            expect([query, e._tag]).toEqual([query, "Forbidden"])
          }
          const e = yield* Effect.flip(RS.find(QuotasResource, w.clientA, { organization_id: w.orgB }))
          expect(e._tag).toBe("Forbidden")
          const e2 = yield* Effect.flip(RS.find(OrganizationsResource, w.clientA, { id: w.orgB }))
          expect(e2._tag).toBe("Forbidden")
        }).pipe(Effect.provide(testLayer())))

      it.effect("a client's find only returns its organization's rows", () =>
        Effect.gen(function*() {
          const w = yield* world()
          yield* RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "a2" })
          yield* RS.create(ApiKeysResource, w.clientB, { organization_id: w.orgB, name: "b2" })
          const pageA = yield* RS.find(ApiKeysResource, w.clientA, {})
          expect(pageA.total).toBe(2)
          expect(pageA.data.map((k) => [k.organization_id, k.name])).toEqual([[w.orgA, "key a"], [w.orgA, "a2"]])
          // Asking for its own organization explicitly is the same.
          const own = yield* RS.find(ApiKeysResource, w.clientA, { organization_id: w.orgA })
          expect(ids(own)).toEqual(ids(pageA))
          // A filter that would match the other org's rows does not widen the scope.
          const ne = yield* RS.find(ApiKeysResource, w.clientA, { organization_id: { $ne: w.orgA } })
          expect(ne.total).toBe(0)
          const orgs = yield* RS.find(OrganizationsResource, w.clientA, {})
          expect(ids(orgs)).toEqual([w.orgA])
          const quotas = yield* RS.find(QuotasResource, w.clientA, {})
          expect(quotas.data.map((r) => r.organization_id)).toEqual([w.orgA])
          // The operator sees every organization's keys (bootstrap key is internal: left out).
          const all = yield* RS.find(ApiKeysResource, w.operator, { $sort: { name: "1" } })
          expect(all.data.map((k) => k.name)).toEqual(["a2", "b2", "key a", "key b"])
        }).pipe(Effect.provide(testLayer())))

      it.effect("a client reads its own organization but not another (NotFound)", () =>
        Effect.gen(function*() {
          const w = yield* world()
          expect((yield* RS.get(OrganizationsResource, w.clientA, w.orgA)).name).toBe("Org A")
          expect((yield* Effect.flip(RS.get(OrganizationsResource, w.clientA, w.orgB)))._tag).toBe("NotFound")
          expect((yield* Effect.flip(RS.patch(OrganizationsResource, w.clientA, w.orgB, { website: "https://x.io" })))._tag)
            .toBe("NotFound")
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- find through the store

    describe("find: query semantics through the store", () => {
      it.effect("filters, operators, $or, sort, paging, total and $select", () =>
        Effect.gen(function*() {
          const w = yield* world()
          for (const [name, description] of [["k1", "x"], ["k2", null], ["k3", "y"], ["k4", "x"]] as const) {
            yield* TestClock.adjust("1 second")
            yield* RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name, description })
          }
          const names = (p: { data: ReadonlyArray<Row> }) => p.data.map((r) => r.name)

          expect(names(yield* RS.find(ApiKeysResource, w.clientA, { description: "x" }))).toEqual(["k1", "k4"])
          expect(names(yield* RS.find(ApiKeysResource, w.clientA, { description: "null" }))).toEqual(["k2"])
          // $ne matches NULL too (a user expects "not x" to include unset).
          expect(names(yield* RS.find(ApiKeysResource, w.clientA, { description: { $ne: "x" } }))).toEqual([
            "key a",
            "k2",
            "k3"
          ])
          expect(names(yield* RS.find(ApiKeysResource, w.clientA, { name: { $in: ["k1", "k3"] } }))).toEqual(["k1", "k3"])
          expect(names(yield* RS.find(ApiKeysResource, w.clientA, { name: { $nin: ["k1", "k3"] } }))).toEqual([
            "key a",
            "k2",
            "k4"
          ])
          expect(
            names(yield* RS.find(ApiKeysResource, w.clientA, { created_at: { $gt: iso(T0 + 1000), $lte: iso(T0 + 3000) } }))
          ).toEqual(["k2", "k3"])
          const either = yield* RS.find(ApiKeysResource, w.clientA, { $or: [{ name: "k1" }, { description: "y" }] })
          expect(names(either)).toEqual(["k1", "k3"])

          const page = yield* RS.find(ApiKeysResource, w.clientA, { $sort: { name: "-1" }, $limit: "2", $skip: "1" })
          expect(page.total).toBe(5)
          expect(page.limit).toBe(2)
          expect(page.skip).toBe(1)
          expect(names(page)).toEqual(["k4", "k3"])

          const none = yield* RS.find(ApiKeysResource, w.clientA, { $limit: "0" })
          expect(none).toEqual({ total: 5, limit: 0, skip: 0, data: [] })

          const selected = yield* RS.find(ApiKeysResource, w.clientA, { $select: ["name"], name: "k1" })
          expect(selected.data).toEqual([{ id: selected.data[0]!.id, name: "k1" }])
        }).pipe(Effect.provide(testLayer())))

      it.effect("an unknown field, a private column or a bad value is InvalidInput", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const unknown = yield* Effect.flip(RS.find(ApiKeysResource, w.clientA, { colour: "red" }))
          expect(unknown._tag === "InvalidInput" && unknown.errors).toEqual({ colour: "is not a field of this resource" })
          const hash = yield* Effect.flip(RS.find(ApiKeysResource, w.clientA, { secret_hash: "h:x" }))
          expect(hash._tag === "InvalidInput" && hash.errors).toEqual({ secret_hash: "is not a field of this resource" })
          const bool = yield* Effect.flip(RS.find(ApiKeysResource, w.clientA, { enabled: "maybe" }))
          expect(bool._tag === "InvalidInput" && bool.errors).toEqual({ enabled: "must be true or false" })
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- input rules

    describe("write bodies", () => {
      it.effect("output-only fields in a create body are InvalidInput naming the field", () =>
        Effect.gen(function*() {
          const w = yield* world()
          for (const field of ["created_at", "updated_at", "id", "version", "secret", "enabled"]) {
            const e = yield* Effect.flip(
              RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "k", [field]: "x" })
            )
            expect(e._tag).toBe("InvalidInput")
            expect([field, e._tag === "InvalidInput" && e.errors]).toEqual([
              field,
              { [field]: "is output only and cannot be set" }
            ])
          }
          // Nothing was created by the refused attempts.
          expect((yield* RS.find(ApiKeysResource, w.clientA, {})).total).toBe(1)
        }).pipe(Effect.provide(testLayer())))

      it.effect("is_internal is a create input of keys (false accepted from a client)", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const k = yield* RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "k", is_internal: false })
          expect(k.is_internal).toBe(false)
          expect(k.enabled).toBe(true)
          expect(k.version).toBe(1)
          expect(k.created_at).toBe(iso(T0))
        }).pipe(Effect.provide(testLayer())))

      it.effect("an unknown field is InvalidInput; several problems are all named", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(
            RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "k", colour: "red", secret: "s" })
          )
          expect(e._tag === "InvalidInput" && e.errors).toEqual({
            colour: "is not a field of this resource",
            secret: "is output only and cannot be set"
          })
          const e2 = yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.keyAId, { colour: "red" }))
          expect(e2._tag === "InvalidInput" && e2.errors).toEqual({ colour: "is not a field of this resource" })
        }).pipe(Effect.provide(testLayer())))

      it.effect("schema violations name the field; a non-object body is refused", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "  " }))
          expect(e._tag === "InvalidInput" && e.errors).toEqual({ name: "must not be empty" })
          const missing = yield* Effect.flip(RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA }))
          expect(missing._tag === "InvalidInput" && Object.keys(missing.errors ?? {})).toEqual(["name"])
          const arr = yield* Effect.flip(RS.create(ApiKeysResource, w.clientA, [1, 2]))
          expect(arr._tag === "InvalidInput" && arr.errors).toEqual({ body: "must be an object" })
          const put = yield* Effect.flip(RS.update(ApiKeysResource, w.clientA, w.keyAId, { name: "n" }))
          expect(put._tag === "InvalidInput" && Object.keys(put.errors ?? {})).toEqual(["enabled"])
        }).pipe(Effect.provide(testLayer())))

      it.effect("patch ignores id, created_at and updated_at, and sets updated_at itself", () =>
        Effect.gen(function*() {
          const w = yield* world()
          yield* TestClock.adjust("10 seconds")
          const after = yield* RS.patch(ApiKeysResource, w.clientA, w.keyAId, {
            id: "hijack",
            created_at: "2000-01-01T00:00:00.000Z",
            updated_at: "2000-01-01T00:00:00.000Z",
            description: "changed"
          })
          expect(after.id).toBe(w.keyAId)
          expect(after.created_at).toBe(iso(T0))
          expect(after.updated_at).toBe(iso(T0 + 10_000))
          expect(after.description).toBe("changed")
          expect(after.name).toBe("key a")
          expect(Option.isNone(yield* storedRow(Tables.keys, "hijack"))).toBe(true)
        }).pipe(Effect.provide(testLayer())))

      it.effect("output-only fields in a patch are refused (is_internal, organization_id)", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.keyAId, { is_internal: true }))
          expect(e._tag === "InvalidInput" && e.errors).toEqual({ is_internal: "is output only and cannot be set" })
          const e2 = yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.keyAId, { organization_id: w.orgB }))
          expect(e2._tag === "InvalidInput" && e2.errors).toEqual({ organization_id: "is output only and cannot be set" })
        }).pipe(Effect.provide(testLayer())))

      it.effect("version starts at 1 and increments on every patch and update", () =>
        Effect.gen(function*() {
          const w = yield* world()
          expect(w.keyA.version).toBe(1)
          const p1 = yield* RS.patch(ApiKeysResource, w.clientA, w.keyAId, { description: "one" })
          expect(p1.version).toBe(2)
          // A patch that changes nothing still counts as a write.
          const p2 = yield* RS.patch(ApiKeysResource, w.clientA, w.keyAId, {})
          expect(p2.version).toBe(3)
          const u = yield* RS.update(ApiKeysResource, w.clientA, w.keyAId, { name: "renamed", enabled: true, version: 3 })
          expect(u.version).toBe(4)
          // update replaces: the description not sent is cleared.
          expect(u.description).toBeNull()
          expect(u.name).toBe("renamed")
          expect((yield* RS.get(ApiKeysResource, w.clientA, w.keyAId)).version).toBe(4)
        }).pipe(Effect.provide(testLayer())))

      it.effect("a stale version is a Conflict and changes nothing", () =>
        Effect.gen(function*() {
          const w = yield* world()
          yield* RS.patch(ApiKeysResource, w.clientA, w.keyAId, { description: "v2" })
          const e = yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.keyAId, { description: "stale", version: 1 }))
          expect(e._tag).toBe("Conflict")
          expect(e._tag === "Conflict" && e.errors).toEqual({ version: "is not the current version" })
          const e2 = yield* Effect.flip(
            RS.update(ApiKeysResource, w.clientA, w.keyAId, { name: "n", enabled: true, version: 5 })
          )
          expect(e2._tag).toBe("Conflict")
          const now = yield* RS.get(ApiKeysResource, w.clientA, w.keyAId)
          expect([now.description, now.name, now.version]).toEqual(["v2", "key a", 2])
          // The current version is accepted.
          expect((yield* RS.patch(ApiKeysResource, w.clientA, w.keyAId, { description: "v3", version: 2 })).version).toBe(3)
          const bad = yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.keyAId, { version: "3" }))
          expect(bad._tag === "InvalidInput" && bad.errors).toEqual({ version: "must be a positive integer" })
        }).pipe(Effect.provide(testLayer())))

      it.effect("a duplicate key name in one organization is a Conflict naming name; other orgs may reuse it", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "key a" }))
          expect(e._tag === "Conflict" && e.errors).toEqual({ name: "already exists" })
          const other = yield* RS.create(ApiKeysResource, w.clientB, { organization_id: w.orgB, name: "key a" })
          expect(other.organization_id).toBe(w.orgB)
          const dupOrg = yield* Effect.flip(RS.create(OrganizationsResource, w.operator, { name: "Org A" }))
          expect(dupOrg._tag === "Conflict" && dupOrg.errors).toEqual({ name: "already exists" })
        }).pipe(Effect.provide(testLayer())))

      it.effect("remove returns the removed object; then it is gone", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const k = yield* RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "tmp" })
          const removed = yield* RS.remove(ApiKeysResource, w.clientA, k.id as string)
          expect(removed.name).toBe("tmp")
          expect(removed.secret).toBeUndefined()
          expect((yield* Effect.flip(RS.get(ApiKeysResource, w.clientA, k.id as string)))._tag).toBe("NotFound")
          expect((yield* Effect.flip(RS.remove(ApiKeysResource, w.clientA, k.id as string)))._tag).toBe("NotFound")
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- keys: internal keys and secrets

    describe("API keys", () => {
      const withInternalKey = Effect.gen(function*() {
        const w = yield* world()
        const internal = yield* RS.create(ApiKeysResource, w.operator, {
          organization_id: w.orgA,
          name: "managed",
          is_internal: true
        })
        return { ...w, internalId: internal.id as string }
      })

      it.effect("internal keys are hidden from a client's find and get", () =>
        Effect.gen(function*() {
          const w = yield* withInternalKey
          const page = yield* RS.find(ApiKeysResource, w.clientA, {})
          expect(page.data.map((k) => k.name)).toEqual(["key a"])
          expect(page.total).toBe(1)
          expect((yield* Effect.flip(RS.get(ApiKeysResource, w.clientA, w.internalId)))._tag).toBe("NotFound")
          expect((yield* Effect.flip(RS.patch(ApiKeysResource, w.clientA, w.internalId, { enabled: false })))._tag).toBe(
            "NotFound"
          )
          expect((yield* Effect.flip(RS.remove(ApiKeysResource, w.clientA, w.internalId)))._tag).toBe("NotFound")
          // Asking for public keys only is fine.
          expect((yield* RS.find(ApiKeysResource, w.clientA, { is_internal: "false" })).data.map((k) => k.name)).toEqual([
            "key a"
          ])
        }).pipe(Effect.provide(testLayer())))

      it.effect("is_internal=true (or any other way to ask for them) by a non-operator is Forbidden", () =>
        Effect.gen(function*() {
          const w = yield* withInternalKey
          for (
            const query of [{ is_internal: "true" }, { is_internal: { $ne: "false" } }, { is_internal: { $in: ["true"] } }]
          ) {
            const e = yield* Effect.flip(RS.find(ApiKeysResource, w.clientA, query))
            expect([query, e._tag]).toEqual([query, "Forbidden"])
          }
        }).pipe(Effect.provide(testLayer())))

      it.effect("is_internal=false inside $or does not let internal keys through the other branches", () =>
        Effect.gen(function*() {
          const w = yield* withInternalKey
          const page = yield* RS.find(ApiKeysResource, w.clientA, { $or: [{ is_internal: "false" }, { enabled: "true" }] })
          expect(page.data.map((k) => k.name)).toEqual(["key a"])
          const byName = yield* RS.find(ApiKeysResource, w.clientA, {
            $or: [{ is_internal: "false" }, { name: "managed" }]
          })
          expect(byName.data.map((k) => k.name)).toEqual(["key a"])
        }).pipe(Effect.provide(testLayer())))

      it.effect("the operator sees internal keys when it asks, and only then", () =>
        Effect.gen(function*() {
          const w = yield* withInternalKey
          const asked = yield* RS.find(ApiKeysResource, w.operator, { is_internal: "true", $sort: { name: "1" } })
          expect(asked.data.map((k) => k.name)).toEqual(["admin-admin", "managed"])
          const inA = yield* RS.find(ApiKeysResource, w.operator, { is_internal: "true", organization_id: w.orgA })
          expect(ids(inA)).toEqual([w.internalId])
          const notAsked = yield* RS.find(ApiKeysResource, w.operator, { organization_id: w.orgA })
          expect(notAsked.data.map((k) => k.name)).toEqual(["key a"])
          expect((yield* RS.get(ApiKeysResource, w.operator, w.internalId)).is_internal).toBe(true)
        }).pipe(Effect.provide(testLayer())))

      it.effect("only the operator creates internal keys", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(
            RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "x", is_internal: true })
          )
          expect(e._tag).toBe("Forbidden")
          expect(e.message).toBe("Only the operator may create internal keys")
          yield* setPersonPassword({ email: "m@example.com", name: "M", password: "password1" })
          const member = yield* loginPerson("m@example.com", "password1")
          const org = yield* RS.create(OrganizationsResource, member, { name: "Mine" })
          const member2 = yield* loginPerson("m@example.com", "password1")
          const e2 = yield* Effect.flip(
            RS.create(ApiKeysResource, member2, { organization_id: org.id, name: "x", is_internal: true })
          )
          expect(e2._tag).toBe("Forbidden")
          expect((yield* rowsOf(Tables.keys, eq("is_internal", true))).map((k) => k.id)).toEqual(["admin"])
        }).pipe(Effect.provide(testLayer())))

      it.effect("the secret is returned once on create, stored hashed, never on get or find", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const created = yield* RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "new" })
          const secret = created.secret as string
          expect(secret).toMatch(/^sk_[A-Za-z0-9_-]{43}$/)
          expect(Object.keys(created)).not.toContain("secret_hash")
          const stored = Option.getOrThrow(yield* storedRow(Tables.keys, created.id as string))
          expect(stored.secret_hash).toBe(`h:${secret}`)
          expect(stored.secret).toBeUndefined()
          const got = yield* RS.get(ApiKeysResource, w.clientA, created.id as string)
          expect(got).not.toHaveProperty("secret")
          expect(got).not.toHaveProperty("secret_hash")
          expect(Object.keys(got).sort()).toEqual(
            ["created_at", "description", "enabled", "id", "is_internal", "name", "organization_id", "previous_secret_expires_at", "updated_at", "version"]
          )
          const found = yield* RS.find(ApiKeysResource, w.clientA, { name: "new" })
          expect(found.data[0]).not.toHaveProperty("secret")
          expect(found.data[0]).not.toHaveProperty("secret_hash")
          const patched = yield* RS.patch(ApiKeysResource, w.clientA, created.id as string, { description: "d" })
          expect(patched).not.toHaveProperty("secret")
          // The shown secret opens a session.
          expect(yield* login(created.id as string, secret)).toEqual({
            _tag: "Client",
            keyId: created.id,
            organizationId: w.orgA
          })
        }).pipe(Effect.provide(testLayer())))

      it.effect("a rotation keeps the replaced secret hashed as the current one is, until its date, and never shows either hash", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const created = yield* RS.create(ApiKeysResource, w.clientA, { organization_id: w.orgA, name: "rotated" })
          const rotated = yield* rotateKeySecret(w.clientA, created.id as string, {})
          const stored = Option.getOrThrow(yield* storedRow(Tables.keys, created.id as string))
          expect(stored.secret_hash).toBe(`h:${rotated.secret}`)
          expect(stored.previous_secret_hash).toBe(`h:${created.secret}`)
          expect(stored.previous_secret_expires_at).toBe(new Date(T0 + 86_400_000).toISOString())
          expect(rotated.previous_secret_expires_at).toBe(stored.previous_secret_expires_at)
          expect(JSON.stringify(rotated)).not.toContain("h:")
          for (const secret of [created.secret as string, rotated.secret as string]) {
            expect(yield* login(created.id as string, secret)).toMatchObject({ _tag: "Client", keyId: created.id })
          }
          yield* TestClock.adjust("1 day")
          expect((yield* Effect.flip(login(created.id as string, created.secret as string)))._tag).toBe("InvalidInput")
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- quotas, premium features, secrets

    describe("quotas and premium features", () => {
      it.effect("creating secrets beyond the organization's quota is QuotaExceeded", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const quotaA = (yield* quotaOf(w.orgA))!
          const patched = yield* RS.patch(QuotasResource, w.operator, quotaA.id as string, { secrets: 2 })
          expect(patched.secrets).toBe(2)
          expect(patched.version).toBe(2)
          const s1 = yield* RS.create(SecretsResource, w.clientA, { organization_id: w.orgA, name: "s1" })
          expect(s1.secret).toMatch(/^ss_/)
          expect((yield* RS.get(SecretsResource, w.clientA, s1.id as string)).secret).toBeUndefined()
          yield* RS.create(SecretsResource, w.clientA, { organization_id: w.orgA, name: "s2" })
          const e = yield* Effect.flip(RS.create(SecretsResource, w.clientA, { organization_id: w.orgA, name: "s3" }))
          expect(e._tag).toBe("QuotaExceeded")
          expect(e._tag === "QuotaExceeded" && [e.quota, e.limit]).toEqual(["secrets", 2])
          expect((yield* RS.find(SecretsResource, w.clientA, {})).total).toBe(2)
          // Another organization has its own count.
          yield* RS.create(SecretsResource, w.clientB, { organization_id: w.orgB, name: "s1" })
          // Freeing one makes room again.
          yield* RS.remove(SecretsResource, w.clientA, s1.id as string)
          const s3 = yield* RS.create(SecretsResource, w.clientA, { organization_id: w.orgA, name: "s3" })
          expect(s3.name).toBe("s3")
        }).pipe(Effect.provide(testLayer())))

      it.effect("a quota of 0 forbids the first one", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const quotaA = (yield* quotaOf(w.orgA))!
          yield* RS.patch(QuotasResource, w.operator, quotaA.id as string, { secrets: 0 })
          const e = yield* Effect.flip(RS.create(SecretsResource, w.clientA, { organization_id: w.orgA, name: "s" }))
          expect(e._tag === "QuotaExceeded" && e.limit).toBe(0)
        }).pipe(Effect.provide(testLayer())))

      it.effect("quotas and premium features: a client reads its own, cannot create, patch or update them", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const quotaA = (yield* quotaOf(w.orgA))!
          const featuresA = (yield* rowOf(Tables.premiumFeatures, w.orgA))!
          expect((yield* RS.get(QuotasResource, w.clientA, quotaA.id as string)).secrets).toBe(20)
          expect((yield* RS.get(PremiumFeaturesResource, w.clientA, featuresA.id as string)).webhooks).toBe(false)
          const attempts: ReadonlyArray<Effect.Effect<unknown, DomainError, Layer.Layer.Success<ReturnType<typeof testLayer>>>> = [
            RS.create(QuotasResource, w.clientA, { organization_id: w.orgA, secrets: 100 }),
            RS.patch(QuotasResource, w.clientA, quotaA.id as string, { secrets: 100 }),
            RS.create(PremiumFeaturesResource, w.clientA, { organization_id: w.orgA, webhooks: true }),
            RS.patch(PremiumFeaturesResource, w.clientA, featuresA.id as string, { webhooks: true }),
            RS.update(PremiumFeaturesResource, w.clientA, featuresA.id as string, { webhooks: true })
          ]
          for (const [i, attempt] of attempts.entries()) {
            const e = yield* Effect.flip(attempt)
            expect([i, e._tag]).toEqual([i, "Forbidden"])
          }
          // Methods a resource does not have are refused for everyone.
          expect((yield* Effect.flip(RS.remove(QuotasResource, w.operator, quotaA.id as string)))._tag).toBe("Forbidden")
          expect((yield* quotaOf(w.orgA))!.secrets).toBe(20)
          expect((yield* quotaOf(w.orgA))!.version).toBe(1)
        }).pipe(Effect.provide(testLayer())))

      it.effect("the operator patches premium features; a second quota row for an org is a Conflict", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const featuresA = (yield* rowOf(Tables.premiumFeatures, w.orgA))!
          const p = yield* RS.patch(PremiumFeaturesResource, w.operator, featuresA.id as string, { webhooks: true })
          expect([p.webhooks, p.sso, p.version]).toEqual([true, false, 2])
          const e = yield* Effect.flip(RS.create(QuotasResource, w.operator, { organization_id: w.orgA }))
          expect(e._tag).toBe("Conflict")
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- organizations

    describe("organizations", () => {
      it.effect("a client cannot create an organization", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.create(OrganizationsResource, w.clientA, { name: "Rogue" }))
          expect(e._tag).toBe("Forbidden")
          expect((yield* rowsOf(Tables.organizations)).map((o) => o.name).sort()).toEqual(["Operator", "Org A", "Org B"])
          expect(yield* Effect.flatMap(Storage, (s) => s.repository(Tables.quotas).count([]))).toBe(3)
        }).pipe(Effect.provide(testLayer())))

      it.effect("created by the operator: self_register false, quota and premium-feature rows created", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* bootstrap({ key: "admin", secret: "admin-secret" })
          const operator = yield* login("admin", "admin-secret")
          const org = yield* RS.create(OrganizationsResource, operator, {
            name: "Acme",
            website: "https://acme.example",
            allow_chat_support: true
          })
          expect(org.self_register).toBe(false)
          expect(org.allow_chat_support).toBe(true)
          expect(org.validate_purpose_id).toBe(false)
          expect(org.auth_message_priority).toEqual([])
          expect(org.public_api_key).toMatch(/^pk_/)
          expect(org.version).toBe(1)
          expect(org.created_at).toBe(iso(T0))
          const quotas = yield* rowsOf(Tables.quotas, eq("organization_id", org.id as string))
          expect(quotas.length).toBe(1)
          expect([quotas[0]!.secrets, quotas[0]!.api_requests, quotas[0]!.version]).toEqual([20, 1_000_000, 1])
          const features = yield* rowsOf(Tables.premiumFeatures, eq("organization_id", org.id as string))
          expect(features.length).toBe(1)
          expect([features[0]!.webhooks, features[0]!.consents_api]).toEqual([true, false])
          // Visible through the services too.
          expect((yield* RS.find(QuotasResource, operator, { organization_id: org.id })).total).toBe(1)
        }).pipe(Effect.provide(testLayer({ defaultPremiumFeatures: ["webhooks"] }))))

      it.effect("created by a member: self_register true and a membership created", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* bootstrap({ key: "admin", secret: "admin-secret" })
          const person = yield* setPersonPassword({ email: "Ann@Example.com", name: "Ann", password: "correct horse" })
          const member = yield* loginPerson("ann@example.com", "correct horse")
          expect(member).toEqual({ _tag: "Member", personId: person.id, organizationIds: [] })
          const org = yield* RS.create(OrganizationsResource, member, { name: "Ann's" })
          expect(org.self_register).toBe(true)
          const memberships = yield* rowsOf(Tables.members, eq("organization_id", org.id as string))
          expect(memberships.map((m) => m.user_id)).toEqual([person.id])
          expect((yield* rowsOf(Tables.quotas, eq("organization_id", org.id as string))).length).toBe(1)
          // A new session of the member acts in it.
          const again = yield* loginPerson("ann@example.com", "correct horse")
          expect(again).toEqual({ _tag: "Member", personId: person.id, organizationIds: [org.id] })
          expect((yield* RS.get(OrganizationsResource, again, org.id as string)).name).toBe("Ann's")
          // A member may not set the operator's flags.
          const e = yield* Effect.flip(RS.create(OrganizationsResource, member, { name: "Two", allow_chat_support: true }))
          expect(e._tag === "InvalidInput" && e.errors).toEqual({ allow_chat_support: "may only be set by the operator" })
        }).pipe(Effect.provide(testLayer())))

      it.effect("output-only organization fields: refused from a client, operator flags allowed to the operator, self_register to nobody", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const e = yield* Effect.flip(RS.patch(OrganizationsResource, w.clientA, w.orgA, { validate_purpose_id: true }))
          expect(e._tag === "InvalidInput" && e.errors).toEqual({ validate_purpose_id: "may only be set by the operator" })
          const e2 = yield* Effect.flip(RS.patch(OrganizationsResource, w.clientA, w.orgA, { public_api_key: "pk_x" }))
          expect(e2._tag === "InvalidInput" && e2.errors).toEqual({ public_api_key: "is output only and cannot be set" })
          const e3 = yield* Effect.flip(RS.create(OrganizationsResource, w.operator, { name: "X", self_register: true }))
          expect(e3._tag === "InvalidInput" && e3.errors).toEqual({ self_register: "is output only and cannot be set" })
          const ok = yield* RS.patch(OrganizationsResource, w.operator, w.orgA, { validate_purpose_id: true })
          expect([ok.validate_purpose_id, ok.version]).toEqual([true, 2])
          const own = yield* RS.patch(OrganizationsResource, w.clientA, w.orgA, { website: "https://a.example" })
          expect([own.website, own.version]).toEqual(["https://a.example", 3])
        }).pipe(Effect.provide(testLayer())))

      it.effect("removal: operator only; takes the organization's rows with it; never the operator's own", () =>
        Effect.gen(function*() {
          const w = yield* world()
          expect((yield* Effect.flip(RS.remove(OrganizationsResource, w.clientA, w.orgA)))._tag).toBe("Forbidden")
          const removed = yield* RS.remove(OrganizationsResource, w.operator, w.orgA)
          expect(removed.name).toBe("Org A")
          for (const table of [Tables.quotas, Tables.premiumFeatures, Tables.keys]) {
            expect([table.table, (yield* rowsOf(table, eq("organization_id", w.orgA))).length]).toEqual([table.table, 0])
          }
          expect((yield* rowsOf(Tables.keys, eq("organization_id", w.orgB))).length).toBe(1)
          const login2 = yield* Effect.flip(createSession({ type: "api-key", key: w.keyAId, secret: w.keyA.secret }))
          expect(login2._tag).toBe("InvalidInput")
          const e = yield* Effect.flip(RS.remove(OrganizationsResource, w.operator, "operator"))
          expect(e._tag).toBe("Forbidden")
          expect(Option.isSome(yield* storedRow(Tables.organizations, "operator"))).toBe(true)
          expect(yield* rowOf(Tables.quotas, "operator")).toBeDefined()
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- sessions

    describe("sessions", () => {
      it.effect("api-key happy path: a token with the key, its org and exp = iat + 3600", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const s = yield* createSession({ type: "api-key", key: w.keyAId, secret: w.keyA.secret })
          expect(s.type).toBe("api-key")
          expect(s.key).toBe(w.keyAId)
          const claims = JSON.parse(s.access_token) as TokenClaims
          expect(claims).toEqual({ sub: w.keyAId, kind: "client", org: w.orgA, iat: T0 / 1000, exp: T0 / 1000 + 3600 })
          const admin = JSON.parse((yield* createSession({ type: "api-key", key: "admin", secret: "admin-secret" })).access_token)
          expect([admin.kind, admin.org]).toEqual(["operator", "operator"])
        }).pipe(Effect.provide(testLayer())))

      it.effect("wrong secret, unknown key and disabled key are the same InvalidInput", () =>
        Effect.gen(function*() {
          const w = yield* world()
          yield* RS.patch(ApiKeysResource, w.clientB, w.keyBId, { enabled: false })
          const attempts = [
            { type: "api-key", key: w.keyAId, secret: "wrong" },
            { type: "api-key", key: "no-such-key", secret: w.keyA.secret },
            { type: "api-key", key: w.keyBId, secret: w.keyB.secret },
            { type: "api-key", key: "admin", secret: "h:admin-secret" }
          ]
          for (const [i, body] of attempts.entries()) {
            const e = yield* Effect.flip(createSession(body))
            expect([i, e._tag, e.message, e._tag === "InvalidInput" && e.errors]).toEqual([
              i,
              "InvalidInput",
              "Invalid login",
              { secret: "the key or secret is not valid" }
            ])
          }
          const malformed = yield* Effect.flip(createSession({ type: "token", key: "k", secret: "s" }))
          expect(malformed._tag === "InvalidInput" && Object.keys(malformed.errors ?? {})).toEqual(["type"])
          const email = yield* Effect.flip(createSession({ type: "email", key: "nobody@example.com", secret: "whatever" }))
          expect(email.message).toBe("Invalid login")
        }).pipe(Effect.provide(testLayer())))

      it.effect("a token expires after 3600 s (NotAuthenticated)", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const s = yield* createSession({ type: "api-key", key: w.keyAId, secret: w.keyA.secret })
          yield* TestClock.adjust("3599 seconds")
          expect(yield* authenticate(s.access_token)).toEqual(w.clientA)
          yield* TestClock.adjust("1 second")
          const e = yield* Effect.flip(authenticate(s.access_token))
          expect(e._tag).toBe("NotAuthenticated")
          expect(e.message).toBe("The token has expired")
        }).pipe(Effect.provide(testLayer())))

      it.effect("no token, a garbage token or an unusable kind is NotAuthenticated", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          expect((yield* Effect.flip(authenticate(undefined)))._tag).toBe("NotAuthenticated")
          expect((yield* Effect.flip(authenticate("")))._tag).toBe("NotAuthenticated")
          expect((yield* Effect.flip(authenticate("not json")))._tag).toBe("NotAuthenticated")
          const exp = T0 / 1000 + 60
          const integration = JSON.stringify({ sub: "x", kind: "integration", iat: 0, exp })
          expect((yield* Effect.flip(authenticate(integration)))._tag).toBe("NotAuthenticated")
          const clientWithoutOrg = JSON.stringify({ sub: "x", kind: "client", iat: 0, exp })
          expect((yield* Effect.flip(authenticate(clientWithoutOrg)))._tag).toBe("NotAuthenticated")
        }).pipe(Effect.provide(testLayer())))

      it.effect("a disabled key cannot open a session, but its existing token still authenticates", () =>
        Effect.gen(function*() {
          const w = yield* world()
          const s = yield* createSession({ type: "api-key", key: w.keyAId, secret: w.keyA.secret })
          const disabled = yield* RS.patch(ApiKeysResource, w.operator, w.keyAId, { enabled: false })
          expect(disabled.enabled).toBe(false)
          expect((yield* Effect.flip(createSession({ type: "api-key", key: w.keyAId, secret: w.keyA.secret })))._tag)
            .toBe("InvalidInput")
          yield* TestClock.adjust("30 minutes")
          expect(yield* authenticate(s.access_token)).toEqual({ _tag: "Client", keyId: w.keyAId, organizationId: w.orgA })
        }).pipe(Effect.provide(testLayer())))
    })

    // ---------------------------------------------------------------- api usage

    describe("ApiUsage", () => {
      const setQuota = (operator: Principal, organizationId: string, api_requests: number) =>
        Effect.gen(function*() {
          const quota = (yield* RS.find(QuotasResource, operator, { organization_id: organizationId })).data[0]!
          yield* RS.patch(QuotasResource, operator, quota.id as string, { api_requests })
        })

      it.effect("quota 3: the 4th hit is TooManyRequests until the period ends; hits are written on flush", () =>
        Effect.gen(function*() {
          const w = yield* world(Date.parse("2026-01-31T23:59:00.000Z"))
          yield* setQuota(w.operator, w.orgA, 3)
          const store = yield* UsageStore
          const totals = (period: string) => Effect.all([store.get(w.orgA, period), store.get(w.orgB, period)])
          const usage = yield* ApiUsage.make
          yield* usage.hit(w.orgA)
          yield* usage.hit(w.orgA)
          yield* usage.hit(w.orgA)
          const e = yield* Effect.flip(usage.hit(w.orgA))
          expect(e._tag).toBe("TooManyRequests")
          expect(e.retryAfterSeconds).toBe(60)
          // Another organization is not affected.
          yield* usage.hit(w.orgB)
          // Nothing written yet.
          expect(yield* totals("2026-01")).toEqual([0, 0])
          yield* usage.flush
          expect(yield* totals("2026-01")).toEqual([3, 1])
          // A second flush has nothing to add.
          yield* usage.flush
          expect(yield* totals("2026-01")).toEqual([3, 1])
          // Another server sharing the store sees the flushed total.
          const other = yield* ApiUsage.make
          expect((yield* Effect.flip(other.hit(w.orgA)))._tag).toBe("TooManyRequests")
          // Still refused 30 s later, with a shorter wait.
          yield* TestClock.adjust("30 seconds")
          expect((yield* Effect.flip(usage.hit(w.orgA))).retryAfterSeconds).toBe(30)
          // A new month starts afresh.
          yield* TestClock.adjust("30 seconds")
          yield* usage.hit(w.orgA)
          yield* usage.flush
          expect(yield* totals("2026-02")).toEqual([1, 0])
          expect(yield* totals("2026-01")).toEqual([3, 1])
        }).pipe(Effect.provide(testLayer())))

      it.effect("fixed periods: retryAfterSeconds counts to the end of the window", () =>
        Effect.gen(function*() {
          const w = yield* world(Date.parse("2026-05-05T10:00:10.000Z"))
          yield* setQuota(w.operator, w.orgA, 1)
          const usage = yield* ApiUsage.make
          yield* usage.hit(w.orgA)
          const e = yield* Effect.flip(usage.hit(w.orgA))
          expect(e.retryAfterSeconds).toBe(50)
          yield* TestClock.adjust("50 seconds")
          yield* usage.hit(w.orgA)
        }).pipe(Effect.provide(testLayer({ apiRequestsPeriod: { _tag: "Fixed", seconds: 60 } }))))

      it.effect("a quota lowered meanwhile is seen after the refresh interval", () =>
        Effect.gen(function*() {
          const w = yield* world(Date.parse("2026-05-05T10:00:00.000Z"))
          const usage = yield* ApiUsage.make
          yield* usage.hit(w.orgA)
          yield* usage.hit(w.orgA)
          yield* setQuota(w.operator, w.orgA, 2)
          yield* TestClock.adjust("6 seconds")
          expect((yield* Effect.flip(usage.hit(w.orgA)))._tag).toBe("TooManyRequests")
          // The refresh wrote what was pending.
          expect(yield* Effect.flatMap(UsageStore, (store) => store.get(w.orgA, "2026-05"))).toBe(2)
        }).pipe(Effect.provide(testLayer())))
    })
  })
