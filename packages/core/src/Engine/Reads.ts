import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { Forbidden, InvalidInput, NotFound } from "../Domain/Errors.js"
import type { DomainError } from "../Domain/Errors.js"
import { type Page, type Row, Storage } from "./Ports.js"
import { canAccess, organizationsOf, type Principal } from "./Principal.js"
import { type Condition, eq, type FindQuery, inList, parseFindQuery } from "./Query.js"
import { cursorAfter, type CursorPage, keysetFields, readCursor } from "./Cursor.js"
import type { UrlSigner } from "./Secrets.js"
import { type AnyResource, type Declared, type ResourceDef } from "./Resource.js"
import { selectableFields } from "./QueryFields.js"
import { type CoreServices, type LookUp, type Shape } from "./Shape.js"
import { ensureMethod } from "./Bodies.js"
import { outputOfRow, outputsOf, resolveView, selectFields, repoOf } from "./Views.js"
import { featureOff, hasFeature, requireFeature } from "./Gates.js"
import type { OrganizationLimits } from "./OrganizationLimits.js"

/**
 * The row whose `field` holds `value` among the organizations the principal sees (or the one
 * the look-up names), or none. Where values are unique per organization only, two rows make
 * the look-up ambiguous until it names the organization.
 */
export const findWithin = <S extends Shape>(
  def: Declared<S>,
  principal: Principal,
  field: string,
  value: string,
  at: LookUp
) =>
  Effect.gen(function*() {
    if (at.organizationId !== undefined && !canAccess(principal, at.organizationId)) return Option.none<S["stored"]>()
    const orgs = at.organizationId !== undefined ? [at.organizationId] : organizationsOf(principal)
    const page = yield* (yield* Storage).repository(def.tableDef).find({
      count: false,
      where: [eq(field, value), ...(orgs === "all" ? [] : [inList("organization_id", orgs)])],
      sort: [],
      ordered: false,
      limit: 2,
      skip: 0
    })
    if (page.data.length > 1) {
      return yield* Effect.fail(
        new InvalidInput({
          message: `More than one of your organizations has a ${def.name} with ${field} '${value}': name one with ?organization_id=`,
          errors: { organization_id: "is required: the id is used in more than one of your organizations" }
        })
      )
    }
    return Option.fromNullable(page.data[0])
  })

/** The row with this id among the organizations the principal sees, or none. */
const findById = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  given: string,
  at: LookUp
): Effect.Effect<Option.Option<S["stored"]>, InvalidInput, Storage> => {
  const id = def.normalizeId ? def.normalizeId(given) : given
  if (def.tableDef.key.length > 1) return findWithin(def, principal, "id", id, at)
  if (at.organizationId !== undefined && !canAccess(principal, at.organizationId)) return Effect.succeed(Option.none<S["stored"]>())
  const owner = def.ownerField
  return Effect.map(
    Effect.flatMap(repoOf(def), (repo) => repo.get(id)),
    (row) => at.organizationId !== undefined && owner !== undefined && Option.isSome(row) && row.value[owner] !== at.organizationId
      ? Option.none<S["stored"]>()
      : row
  )
}

/**
 * Loads a row the principal may see, or fails with NotFound (never revealing existence). Every
 * keyed read and write takes this path: written with plain combinators, it allocates no
 * generator per step.
 */
export const loadVisible = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  id: string,
  at: LookUp = {}
): Effect.Effect<S["stored"], InvalidInput | NotFound | Forbidden, Storage | OrganizationLimits> =>
  Effect.flatMap(findById(def, principal, id, at), (row): Effect.Effect<S["stored"], NotFound | Forbidden, OrganizationLimits> => {
    if (Option.isNone(row)) return Effect.fail(notFoundError(def, id))
    const owner = def.ownerField === undefined ? undefined : row.value[def.ownerField]
    if (def.ownerField !== undefined && !canAccess(principal, owner)) return Effect.fail(notFoundError(def, id))
    if (def.hooks.visible && !def.hooks.visible(principal, row.value)) return Effect.fail(notFoundError(def, id))
    return Effect.as(requireFeature(def, principal, owner), row.value)
  })

export const notFoundError = (def: AnyResource, id: string) => new NotFound({ message: `No ${def.name} found for id '${id}'` })

/** The organizations of a find that have the service's premium feature. */
const featureScope = (def: AnyResource, principal: Principal) =>
  Effect.gen(function*() {
    const orgs = organizationsOf(principal)
    if (!def.premiumFeature || orgs === "all") return orgs
    const enabled: Array<string> = []
    for (const org of orgs) if (yield* hasFeature(def, org)) enabled.push(org)
    if (enabled.length === 0) return yield* Effect.fail(featureOff(def))
    return enabled
  })

/** Conditions on the owner field may only name organizations the principal belongs to. */
const scopeQuery = (
  def: AnyResource,
  orgs: ReadonlyArray<string> | "all",
  query: FindQuery
): Effect.Effect<FindQuery, Forbidden> => {
  if (orgs === "all" || def.ownerField === undefined) return Effect.succeed(query)
  const owner = def.ownerField
  const allowed = (v: unknown) => typeof v === "string" && orgs.includes(v)
  const check = (cs: ReadonlyArray<Condition>): boolean =>
    cs.every((c) => {
      if (c._tag === "Or") return c.branches.every(check)
      if (c._tag === "Exists") return c.link.every(([outer]) => outer !== owner)
      if (c.field !== owner) return true
      if (c._tag === "Compare") return c.op !== "eq" || allowed(c.value)
      if (c._tag === "Prefix" || c._tag === "AllIn") return c.negate
      return c.negate || c.values.every(allowed)
    })
  if (!check(query.where)) {
    return Effect.fail(new Forbidden({ message: "You are not allowed to read another organization's data" }))
  }
  return Effect.succeed({ ...query, where: [...query.where, inList(owner, orgs)] })
}

/** The parsed and scoped query of a find, and how its rows become outputs (its view, `$select`). */
const prepareFind = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, rawQuery: Record<string, unknown>) =>
  Effect.gen(function*() {
    const parsed = parseFindQuery(rawQuery, {
      fields: def.queryFields,
      passthrough: def.passthrough ?? [],
      views: Object.keys(def.viewParams ?? {}),
      selectable: selectableFields(def),
      ...(def.filters !== undefined ? { filters: def.filters } : {})
    })
    if (Either.isLeft(parsed)) return yield* Effect.fail(parsed.left)
    const view = yield* resolveView(def, parsed.right.view)
    let query = yield* scopeQuery(def, yield* featureScope(def, principal), parsed.right.query)
    if (def.hooks.find) query = yield* def.hooks.find(principal, query, parsed.right.params, { view, filters: parsed.right.filters })
    const select = query.select
    const output = (rows: ReadonlyArray<S["stored"]>) =>
      Effect.map(outputsOf(def, rows, view), (outs) => outs.map((o) => selectFields(o, select)))
    return { query, output }
  })

/** A find: a page of `{ total, limit, skip, data }`. */
export const find = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, rawQuery: Record<string, unknown>) =>
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, "find")
    const { output, query } = yield* prepareFind(def, principal, rawQuery)
    const page = yield* (yield* repoOf(def)).find(query)
    return { ...page, data: yield* output(page.data) } satisfies Page<Row>
  })

/**
 * A find by cursor (`$cursor`, on a resource that pages by cursor): `{ data, limit, cursor }`,
 * through the same scope, hooks and output as `find`.
 */
export const findByCursor = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, rawQuery: Record<string, unknown>) =>
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, "find")
    if (!def.cursorPaging) {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid query: $cursor is not a supported query parameter",
        errors: { $cursor: "is not a supported query parameter" }
      }))
    }
    const cursor = yield* readCursor(def.path, def.tableDef, rawQuery)
    const { output, query } = yield* prepareFind(def, principal, cursor.query)
    if (query.limit === 0) {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid query: $limit must be at least 1 with $cursor",
        errors: { $limit: "must be at least 1 with $cursor" }
      }))
    }
    // One row beyond the page tells whether another page follows, without counting.
    const page = yield* (yield* repoOf(def)).find({
      ...query,
      limit: query.limit + 1,
      count: false,
      keyset: { fields: keysetFields(def.tableDef), after: cursor.after }
    })
    const rows = page.data.slice(0, query.limit)
    const more = page.data.length > query.limit
    return {
      data: yield* output(rows),
      limit: query.limit,
      cursor: more ? yield* cursorAfter(def.tableDef, cursor.binding, rows[rows.length - 1]!) : null
    } satisfies CursorPage<Row>
  })

/** The find a request asks for: by cursor when it sends `$cursor` to a resource that pages by cursor. */
export const findAsRequested = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  principal: Principal,
  rawQuery: Record<string, unknown>
): Effect.Effect<Page<Row> | CursorPage<Row>, DomainError, CoreServices | UrlSigner | R> =>
  def.cursorPaging && Object.hasOwn(rawQuery, "$cursor") ? findByCursor(def, principal, rawQuery) : find(def, principal, rawQuery)

export const get = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, id: string, at: LookUp = {}) =>
  Effect.zipRight(
    ensureMethod(def, principal, "get"),
    Effect.flatMap(resolveView(def, at.query), (view) =>
      Effect.flatMap(loadVisible(def, principal, id, at), (row) =>
        Effect.flatMap(outputOfRow(def, row, view), (output) => def.hooks.expand ? def.hooks.expand(principal, row, output) : Effect.succeed(output))))
  )

/**
 * A `get` as its request asks: by id, or by the declaration's other key when the query's
 * `getBy` parameter is `true` (`?$by_organization_user_id=true`), which takes no other
 * parameter but the organization and the view.
 */
export const getAsRequested = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, id: string, at: LookUp = {}) =>
  Effect.suspend((): Effect.Effect<S["output"], DomainError, CoreServices | R> => {
    const by = def.getBy
    const q = at.query ?? {}
    const asked = by === undefined ? undefined : q[by.param]
    if (by === undefined || asked === undefined || asked === "false") return get(def, principal, id, at)
    if (asked !== "true") {
      return Effect.fail(new InvalidInput({
        message: `Invalid query: ${by.param} must be true or false`,
        errors: { [by.param]: "must be true or false" }
      }))
    }
    const rest = Object.keys(q).filter((k) => k !== by.param && k !== "organization_id" && !Object.hasOwn(def.viewParams ?? {}, k))
    if (rest.length > 0) {
      return Effect.fail(new InvalidInput({
        message: `Invalid query: ${rest[0]} is not supported here`,
        errors: { [rest[0]!]: "is not supported here" }
      }))
    }
    return by.get(principal, id, at)
  })
