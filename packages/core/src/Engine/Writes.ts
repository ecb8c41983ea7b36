import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { nowIso } from "./Clock.js"
import { both } from "./Sequence.js"
import { keyOf, nextId, type Row, signalOutbox, UnitOfWork } from "./Ports.js"
import { isEndUser, type Principal, requireOrganization } from "./Principal.js"
import { type AnyResource, type ResourceDef } from "./Resource.js"
import { isCarried, type Prepared } from "./Hooks.js"
import { type CoreServices, type LookUp, type Shape, type View } from "./Shape.js"
import type { DomainError } from "../Domain/Errors.js"
import { cascade } from "./Relations.js"
import { isPlainObject, methodNotAllowed, ensureMethod, decodeBody } from "./Bodies.js"
import { pick, outputOfRow, resolveView, repoOf } from "./Views.js"
import { loadVisible, notFoundError } from "./Reads.js"
import { requireFeature, requireFeatureBeforeBody, checkQuota, requireExistingOrganization } from "./Gates.js"
import { recordChange } from "./AuditTrail.js"
import { withService } from "./Services.js"

/**
 * The generic use-cases every resource shares: organization scope, output-only fields,
 * optimistic `version`, count quotas and the resource's hooks. One path for every request.
 */

const nullsFor = (fields: ReadonlySet<string>, def: AnyResource): Row => {
  const out: Row = {}
  for (const f of fields) if (def.tableDef.fields[f]?.nullable) out[f] = null
  return out
}

/**
 * What a create starts from before its input: null in every nullable column, then the resource's
 * defaults. The same for every create of a resource, so made once per resource rather than per
 * write (a consent event has some thirty columns).
 */
const createBases = new WeakMap<AnyResource, Row>()
const createBase = (def: AnyResource): Row => {
  let base = createBases.get(def)
  if (base === undefined) {
    base = { ...nullsFor(new Set(Object.keys(def.tableDef.fields)), def), ...def.defaults }
    createBases.set(def, base)
  }
  return base
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

/**
 * A create: every resource's, every consent event's. Written with plain combinators rather than
 * a generator, whose every step allocates and resumes on the hottest write path.
 */
export const create = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  body: unknown,
  at: Pick<LookUp, "query"> = {}
) =>
  Effect.zipRight(
    ensureMethod(def, principal, "create"),
    Effect.suspend(() => {
      const createInput = def.createInput
      if (!createInput) return Effect.fail(methodNotAllowed(def, "create"))
      const endUser = isEndUser(principal)
      const named = def.ownerFrom || def.ownerField === "id" ? undefined : def.ownerField
      // An end user acts in its credential's one organization, which its body need not name.
      const owned = endUser && named !== undefined && isPlainObject(body) && body[named] === undefined
        ? { ...body, [named]: principal.organizationId }
        : body
      const normalized = def.normalizeCreate && isPlainObject(owned) ? def.normalizeCreate(owned) : owned
      const decoding = decodeBody(def, principal, createInput, def.createFields, normalized, "create")
      const decoded = endUser ? decoding : Effect.zipRight(requireFeatureBeforeBody(def, principal, normalized, named), decoding)
      return Effect.flatMap(decoded, (decoded) => {
        const ownerField = def.ownerField
        const withOwner = def.ownerFrom && ownerField !== undefined
          ? Effect.map(def.ownerFrom(principal, decoded.input), (o): Row => ({ ...decoded.input, [ownerField]: o }))
          : Effect.succeed(decoded.input)
        return Effect.flatMap(withOwner, (input) =>
          Effect.flatMap(resolveView(def, at.query, input), (view) => {
            const owner = ownerField === undefined ? undefined : input[ownerField]
            const inOrganization = ownerField !== undefined && ownerField !== "id" ? requireOrganization(principal, owner) : Effect.void
            // Before the transaction begins.
            const checked = endUser ? inOrganization : Effect.zipRight(inOrganization, requireFeature(def, principal, owner, true))
            const newId = typeof input.id === "string" ? Effect.succeed(input.id) : nextId
            return Effect.flatMap(Effect.zipRight(checked, both(nowIso, newId)), ([now, id]) => {
              // An end user's device cannot backdate what it records.
              const given = endUser ? undefined : input.created_at
              const base: Row = {
                ...createBase(def),
                ...input,
                id,
                created_at: typeof given === "string" ? new Date(given).toISOString() : now,
                updated_at: now,
                version: 1
              }
              const prepared: Effect.Effect<Prepared<S["stored"], C>, DomainError, R | CoreServices> = def.hooks.prepare
                ? def.hooks.prepare(principal, base, input)
                : Effect.succeed({ row: base })
              return Effect.flatMap(prepared, (early) => withService(UnitOfWork, (uow) =>
                uow.transaction(inTransaction(def, principal, early, input, decoded.input, owner, view)).pipe(
                  Effect.tap((out) => committed(def, out)),
                  // A visitor's write answers only what the declaration lists (never through the host API, whose callers hold no public key).
                  Effect.map((out): S["output"] =>
                    principal._tag === "PublicKey" && def.endUsers?.publicAnswer ? pick(out, def.endUsers.publicAnswer) as S["output"] : out
                  )
                )))
            })
          }))
      })
    })
  )

/** A create's part inside its transaction: the organization, the quota, the hooks, the row, the audit. */
const inTransaction = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  early: Prepared<S["stored"], C>,
  input: Row,
  given: Row,
  owner: unknown,
  view: View
) => {
  const existing = def.ownerField === "organization_id" ? requireExistingOrganization(owner as string) : Effect.void
  const gates = typeof owner === "string" ? Effect.zipRight(existing, checkQuota(def, owner)) : existing
  const completing: Effect.Effect<Prepared<S["stored"], C>, DomainError, R | CoreServices> = def.hooks.create
    ? def.hooks.create(principal, early.row, input)
    : Effect.succeed(early)
  return Effect.zipRight(
    gates,
    Effect.flatMap(both(completing, repoOf(def)), ([completed, repo]) => {
      const prepared: Prepared<S["stored"], C> = { ...completed, carry: completed.carry ?? early.carry }
      return Effect.flatMap(repo.create(prepared.row), (stored) => {
        const after = def.hooks.afterCreate ? def.hooks.afterCreate(principal, stored, prepared.carry) : Effect.void
        const audited = def.audited !== false ? Effect.zipRight(after, recordChange(def, principal, "create", stored, Object.keys(given))) : after
        return Effect.zipRight(audited, outputOfRow(def, stored, view, prepared.reveal))
      })
    })
  )
}

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
