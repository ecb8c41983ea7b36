import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { nowIso } from "./Clock.js"
import { Ids, keyOf, type Row, signalOutbox, UnitOfWork } from "./Ports.js"
import { isEndUser, type Principal, requireOrganization } from "./Principal.js"
import { type AnyResource, type ResourceDef } from "./Resource.js"
import { isCarried, type Prepared } from "./Hooks.js"
import { type LookUp, type Shape } from "./Shape.js"
import { cascade } from "./Relations.js"
import { isPlainObject, methodNotAllowed, ensureMethod, decodeBody } from "./Bodies.js"
import { pick, outputOfRow, resolveView, repoOf } from "./Views.js"
import { loadVisible, notFoundError } from "./Reads.js"
import { requireFeature, requireFeatureBeforeBody, checkQuota, requireExistingOrganization } from "./Gates.js"
import { recordChange } from "./AuditTrail.js"

/**
 * The generic use-cases every resource shares: organization scope, output-only fields,
 * optimistic `version`, count quotas and the resource's hooks. One path for every request.
 */

const nullsFor = (fields: ReadonlySet<string>, def: AnyResource): Row => {
  const out: Row = {}
  for (const f of fields) if (def.tableDef.fields[f]?.nullable) out[f] = null
  return out
}

/** What an update (PUT) writes into the updatable fields its body does not name. */
const replacedFields = (def: AnyResource): Row => {
  const out = nullsFor(def.updateFields, def)
  for (const f of def.updateFields) if (Object.hasOwn(def.defaults, f)) out[f] = def.defaults[f]
  return out
}

/**
 * The fields an update or patch changed, as the API names them: stored columns whose value
 * changed that are output or input fields (a private column, a hash or a sealed value, is never
 * named), and input fields given with a value other than the stored one (a webhook's `auth`
 * whose secret is sealed into a private column is named although its stored part is the same).
 */
const changedFields = (def: AnyResource, before: Row, changes: Row, input: Row): ReadonlyArray<string> => {
  const named = Object.keys(changes).filter((k) => Object.hasOwn(def.outputFields, k) || def.updateFields.has(k))
  const given = Object.keys(input).filter((k) => JSON.stringify(input[k]) !== JSON.stringify(before[k]))
  return [...named, ...given]
}

/** After a write's commit: wake the webhook dispatcher, and let the resource drop cached copies. */
const committed = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, output: Row) =>
  Effect.zipRight(signalOutbox, def.hooks.afterCommit ? def.hooks.afterCommit(output) : Effect.void)

export const create = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  body: unknown,
  at: Pick<LookUp, "query"> = {}
) =>
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, "create")
    if (!def.createInput) return yield* Effect.fail(methodNotAllowed(def, "create"))
    const endUser = isEndUser(principal)
    const named = def.ownerFrom || def.ownerField === "id" ? undefined : def.ownerField
    // An end user acts in its credential's one organization, which its body need not name.
    const owned = endUser && named !== undefined && isPlainObject(body) && body[named] === undefined
      ? { ...body, [named]: principal.organizationId }
      : body
    const normalized = def.normalizeCreate && isPlainObject(owned) ? def.normalizeCreate(owned) : owned
    if (!endUser) yield* requireFeatureBeforeBody(def, principal, normalized, named)
    const decoded = yield* decodeBody(def, principal, def.createInput, def.createFields, normalized, "create")
    const input = def.ownerFrom && def.ownerField !== undefined
      ? { ...decoded.input, [def.ownerField]: yield* def.ownerFrom(principal, decoded.input) }
      : decoded.input
    const view = yield* resolveView(def, at.query, input)
    const owner = def.ownerField === undefined ? undefined : input[def.ownerField]
    if (def.ownerField !== undefined && def.ownerField !== "id") yield* requireOrganization(principal, owner)
    if (!endUser) yield* requireFeature(def, principal, owner)
    const now = yield* nowIso
    const id = typeof input.id === "string" ? input.id : yield* Effect.flatMap(Ids, (ids) => ids.next)
    // An end user's device cannot backdate what it records.
    const given = endUser ? undefined : input.created_at
    const base: Row = {
      ...nullsFor(new Set(Object.keys(def.tableDef.fields)), def),
      ...def.defaults,
      ...input,
      id,
      created_at: typeof given === "string" ? new Date(given).toISOString() : now,
      updated_at: now,
      version: 1
    }
    const early: Prepared<S["stored"], C> = def.hooks.prepare ? yield* def.hooks.prepare(principal, base, input) : { row: base }
    const uow = yield* UnitOfWork
    return yield* uow.transaction(
      Effect.gen(function*() {
        if (def.ownerField === "organization_id") yield* requireExistingOrganization(owner as string)
        if (typeof owner === "string") yield* checkQuota(def, owner)
        const completed = def.hooks.create ? yield* def.hooks.create(principal, early.row, input) : early
        const prepared: Prepared<S["stored"], C> = { ...completed, carry: completed.carry ?? early.carry }
        const repo = yield* repoOf(def)
        const stored = yield* repo.create(prepared.row)
        if (def.hooks.afterCreate) yield* def.hooks.afterCreate(principal, stored, prepared.carry)
        if (def.audited !== false) yield* recordChange(def, principal, "create", stored, Object.keys(decoded.input))
        return yield* outputOfRow(def, stored, view, prepared.reveal)
      })
    ).pipe(
      Effect.tap((out) => committed(def, out)),
      // A visitor's write answers only what the declaration lists (never through the host API, whose callers hold no public key).
      Effect.map((out): S["output"] =>
        principal._tag === "PublicKey" && def.endUsers?.publicAnswer ? pick(out, def.endUsers.publicAnswer) as S["output"] : out
      )
    )
  })

export const write = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  id: string,
  body: unknown,
  method: "update" | "patch",
  at: LookUp
) =>
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, method)
    if (!def.updateInput) return yield* Effect.fail(methodNotAllowed(def, method))
    const schema = method === "patch" ? Schema.partial(def.updateInput) : def.updateInput
    const { input, version } = yield* decodeBody(def, principal, schema, def.updateFields, body, "write")
    const view = yield* resolveView(def, at.query, input)
    const uow = yield* UnitOfWork
    return yield* uow.transaction(
      Effect.gen(function*() {
        const before = yield* loadVisible(def, principal, id, at)
        const now = yield* nowIso
        // A full replace: updatable fields the body leaves out go back to their default, or null.
        const replaced = method === "update" ? replacedFields(def) : {}
        let after: Row = { ...before, ...replaced, ...input, updated_at: now }
        let carry: C | undefined
        if (def.hooks.update) {
          const updated = yield* def.hooks.update(principal, before, after, input)
          if (isCarried(updated)) {
            after = updated.row
            carry = updated.carry
          } else after = updated
        }
        const expected = version ?? (before.version as number)
        const repo = yield* repoOf(def)
        const changes: Row = {}
        for (const [k, v] of Object.entries(after)) {
          if (k !== "id" && k !== "version" && JSON.stringify(v) !== JSON.stringify(before[k])) changes[k] = v
        }
        const key = keyOf(def.tableDef, before)
        const stored = method === "update"
          ? yield* repo.update(key, after, expected)
          : yield* repo.patch(key, changes, expected)
        if (def.hooks.afterUpdate) yield* def.hooks.afterUpdate(principal, before, stored, input, carry)
        if (def.audited !== false) yield* recordChange(def, principal, method, stored, changedFields(def, before, changes, input))
        return yield* outputOfRow(def, stored, view)
      })
    ).pipe(Effect.tap((out) => committed(def, out)))
  })

export const update = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, id: string, body: unknown, at: LookUp = {}) =>
  write(def, principal, id, body, "update", at)

export const patch = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, id: string, body: unknown, at: LookUp = {}) =>
  write(def, principal, id, body, "patch", at)

export const remove = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, id: string, at: LookUp = {}) =>
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, "remove")
    const view = yield* resolveView(def, at.query)
    const uow = yield* UnitOfWork
    return yield* uow.transaction(
      Effect.gen(function*() {
        const row = yield* loadVisible(def, principal, id, at)
        if (def.hooks.remove) yield* def.hooks.remove(principal, row)
        const repo = yield* repoOf(def)
        const removed = yield* repo.remove(keyOf(def.tableDef, row), row.version as number)
        if (Option.isNone(removed)) return yield* Effect.fail(notFoundError(def, id))
        yield* cascade(def.tableDef, removed.value)
        if (def.hooks.afterRemove) yield* def.hooks.afterRemove(principal, removed.value)
        if (def.audited !== false) yield* recordChange(def, principal, "remove", removed.value, [])
        return yield* outputOfRow(def, removed.value, view)
      })
    ).pipe(Effect.tap((out) => committed(def, out)))
  })
