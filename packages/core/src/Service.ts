import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { nowIso } from "./Clock.js"
import { Forbidden, InvalidInput, NotFound, QuotaExceeded } from "./Domain/Errors.js"
import type { DomainError } from "./Domain/Errors.js"
import type { PremiumFeatureFlag } from "./Domain/Account.js"
import { Ids, keyOf, type Page, type Row, Storage, UnitOfWork } from "./Ports.js"
import {
  canAccess,
  endUserCredentialOf,
  isEndUser,
  isOperator,
  organizationsOf,
  type Principal,
  requireOrganization
} from "./Principal.js"
import { type Condition, eq, type FindQuery, inList, parseFindQuery } from "./Query.js"
import { cursorAfter, type CursorPage, keysetFields, readCursor } from "./Cursor.js"
import type { UrlSigner } from "./OrganizationPorts.js"
import {
  type AnyResource,
  type AnySchema,
  type CoreServices,
  type Declared,
  isCarried,
  type LookUp,
  type Method,
  type Prepared,
  type ResourceDef,
  type Shape,
  type View
} from "./Resource.js"
import { OrganizationLimits } from "./OrganizationLimits.js"
import { cascade } from "./Relations.js"
import { signalOutbox } from "./Webhooks/Ports.js"

/**
 * The generic use-cases every resource shares: organization scope, output-only fields,
 * optimistic `version`, count quotas and the resource's hooks. One path for every request.
 */

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const ignoredOnWrite = new Set(["id", "created_at", "updated_at", "version"])

const methodNotAllowed = (def: AnyResource, method: Method) =>
  new Forbidden({ message: `Method '${method}' is not allowed on ${def.path}` })

export const ensureMethodFor = (def: AnyResource, principal: Principal, method: Method): Effect.Effect<void, Forbidden> =>
  ensureMethod(def, principal, method)

const ensureMethod = (def: AnyResource, principal: Principal, method: Method): Effect.Effect<void, Forbidden> => {
  if (!def.methods.includes(method)) return Effect.fail(methodNotAllowed(def, method))
  const endUser = endUserCredentialOf(principal)
  if (endUser !== undefined && def.endUsers?.methods[method]?.includes(endUser) !== true) {
    return Effect.fail(new Forbidden({ message: `A ${endUser} may not ${method} ${def.path}` }))
  }
  if (def.operatorOnly.includes(method) && !isOperator(principal)) {
    return Effect.fail(new Forbidden({ message: `Only the operator may ${method} ${def.path}` }))
  }
  return Effect.void
}

/** Turns a schema failure into field-named errors. */
export const toInvalidInput = (error: ParseResult.ParseError, prefix = ""): InvalidInput => {
  // Paths name a client's keys (`constructor`, `__proto__`): no inherited entries to collide with.
  const errors: Record<string, string> = Object.create(null)
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = [prefix, ...issue.path.map(String)].filter((s) => s !== "").join(".") || "body"
    // Schema messages quote the offending value: keep a huge one from flooding the response.
    errors[path] ??= issue.message.length > 300 ? `${issue.message.slice(0, 300)}…` : issue.message
  }
  const first = Object.entries(errors)[0]
  return new InvalidInput({
    message: first ? `Invalid ${first[0]}: ${first[1]}` : "Invalid input",
    errors
  })
}

export const decode = <A>(schema: Schema.Schema<A, any, never>, input: unknown, prefix = "") =>
  Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(input),
    (e) => toInvalidInput(e, prefix)
  )

/** Validates a write body: unknown and output-only fields are named, then the schema runs. */
const decodeBody = (
  def: AnyResource,
  principal: Principal,
  schema: AnySchema,
  allowed: ReadonlySet<string>,
  body: unknown,
  mode: "create" | "write"
): Effect.Effect<{ input: Row; version: number | undefined }, InvalidInput> => {
  if (!isPlainObject(body)) {
    return Effect.fail(new InvalidInput({ message: "The body must be a JSON object", errors: { body: "must be an object" } }))
  }
  const screened = def.screenBody?.(body)
  const refused = screened ? Object.entries(screened)[0] : undefined
  if (refused) return Effect.fail(new InvalidInput({ message: `Invalid ${refused[0]}: ${refused[1]}`, errors: screened }))
  // Keyed by the body's own names: without a prototype, `__proto__` is a name like any other.
  const errors: Record<string, string> = Object.create(null)
  const clean: Row = {}
  const extra: Row = {}
  let version: number | undefined
  const operator = isOperator(principal)
  for (const [k, v] of Object.entries(body)) {
    if (allowed.has(k)) clean[k] = v
    else if (operator && def.operatorFields.has(k)) extra[k] = v
    else if (mode === "write" && ignoredOnWrite.has(k)) {
      if (k === "version" && v !== undefined && v !== null) {
        if (typeof v !== "number" || !Number.isInteger(v) || v < 1) errors.version = "must be a positive integer"
        else version = v
      }
    } else if (def.operatorFields.has(k)) errors[k] = "may only be set by the operator"
    else if (Object.hasOwn(def.outputFields, k)) errors[k] = "is output only and cannot be set"
    else errors[k] = "is not a field of this resource"
  }
  if (Object.keys(errors).length > 0) {
    const [k, m] = Object.entries(errors)[0]!
    return Effect.fail(new InvalidInput({ message: `Invalid ${k}: ${m}`, errors }))
  }
  const decoded = decode(schema, clean)
  if (Either.isLeft(decoded)) return Effect.fail(decoded.left)
  let input: Row = decoded.right
  if (Object.keys(extra).length > 0 && def.operatorInput) {
    const op = decode(Schema.partial(def.operatorInput), extra)
    if (Either.isLeft(op)) return Effect.fail(op.left)
    input = { ...input, ...op.right }
  }
  return Effect.succeed({ input, version })
}

const pick = (row: Row, fields: ReadonlyArray<string>): Row => {
  const out: Row = {}
  for (const f of fields) if (Object.hasOwn(row, f)) out[f] = row[f]
  return out
}

/** Rows keep `null` for unset columns; outputs omit what their schema does not allow null for. */
export const toOutput = <S extends Shape>(def: Declared<S>, row: S["stored"], reveal?: Row): S["output"] => {
  const out: Row = {}
  const stored: Row = row
  for (const [k, info] of Object.entries(def.outputFields)) {
    const v = reveal && k in reveal ? reveal[k] : stored[k]
    if (v === undefined || (v === null && !info.nullable)) continue
    out[k] = v
  }
  // The one place a row becomes an output: the loop above keeps exactly the output's fields.
  return out as S["output"]
}

/** The output of a row in a request's view: the resource's own `present`, or its fields. */
const outputOf = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, row: S["stored"], view: View, reveal?: Row): S["output"] =>
  def.hooks.present ? def.hooks.present(row, view) : toOutput(def, row, reveal)

const badView = (name: string, message: string) =>
  new InvalidInput({ message: `Invalid query: ${name} ${message}`, errors: { [name]: message } })

/**
 * The view parameters of a request, from its query and, on a write, from its body (a consent
 * user created for `ccpa` is answered in its `ccpa` state).
 */
export const resolveView = (
  def: AnyResource,
  query: Readonly<Record<string, unknown>> | undefined,
  body?: Readonly<Record<string, unknown>>
): Effect.Effect<View, InvalidInput> => {
  if (!def.viewParams) return Effect.succeed({})
  const out: Record<string, string> = {}
  for (const [name, schema] of Object.entries(def.viewParams)) {
    const raw = body !== undefined && typeof body[name] === "string" ? body[name] : query?.[name]
    if (raw === undefined) continue
    if (typeof raw !== "string") {
      return Effect.fail(badView(name, `is a view parameter, not a field: only ${name}=<value> is allowed`))
    }
    const decoded = decode(schema, raw)
    if (Either.isLeft(decoded)) return Effect.fail(badView(name, decoded.left.errors?.body ?? "is not valid"))
    out[name] = decoded.right
  }
  return Effect.succeed(out)
}

const selectFields = (row: Row, fields: ReadonlyArray<string> | undefined): Row => {
  if (!fields) return row
  const out: Row = { id: row.id }
  for (const f of fields) if (f in row) out[f] = row[f]
  return out
}

const repoOf = (def: AnyResource) => Effect.map(Storage, (s) => s.repository(def.tableDef))

/**
 * Where a look-up by id happens: `organizationId` (`?organization_id=`) names the organization
 * when the principal sees several, and an id chosen by clients may be held by more than one.
 */
export type { LookUp } from "./Resource.js"

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
const findById = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, given: string, at: LookUp) =>
  Effect.gen(function*() {
    const id = def.normalizeId ? def.normalizeId(given) : given
    if (def.tableDef.key.length > 1) return yield* findWithin(def, principal, "id", id, at)
    if (at.organizationId !== undefined && !canAccess(principal, at.organizationId)) return Option.none<S["stored"]>()
    const row = yield* (yield* repoOf(def)).get(id)
    const owner = Option.isSome(row) && def.ownerField !== undefined ? row.value[def.ownerField] : undefined
    return at.organizationId !== undefined && def.ownerField !== undefined && owner !== at.organizationId
      ? Option.none<S["stored"]>()
      : row
  })

/** Loads a row the principal may see, or fails with NotFound (never revealing existence). */
export const loadVisible = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, id: string, at: LookUp = {}) =>
  Effect.gen(function*() {
    const row = yield* findById(def, principal, id, at)
    if (Option.isNone(row)) return yield* Effect.fail(notFoundError(def, id))
    const owner = def.ownerField === undefined ? undefined : row.value[def.ownerField]
    if (def.ownerField !== undefined && !canAccess(principal, owner)) return yield* Effect.fail(notFoundError(def, id))
    if (def.hooks.visible && !def.hooks.visible(principal, row.value)) return yield* Effect.fail(notFoundError(def, id))
    yield* requireFeature(def, principal, owner)
    return row.value
  })

const notFoundError = (def: AnyResource, id: string) => new NotFound({ message: `No ${def.name} found for id '${id}'` })

const flagOff = (flag: PremiumFeatureFlag) =>
  new Forbidden({ message: `The premium feature '${flag}' is not enabled for this organization` })

const featureOff = (def: AnyResource) => flagOff(def.premiumFeature!)

const hasFlag = (flag: PremiumFeatureFlag, organizationId: string) =>
  Effect.flatMap(OrganizationLimits, (limits) => Effect.map(limits.featuresOf(organizationId), (features) => features.has(flag)))

const hasFeature = (def: AnyResource, organizationId: string) => hasFlag(def.premiumFeature!, organizationId)

/** An organization without this premium feature is answered 403 (for gates a declaration cannot name). */
export const requireFlag = (flag: PremiumFeatureFlag, organizationId: string) =>
  Effect.flatMap(hasFlag(flag, organizationId), (on) => (on ? Effect.void : Effect.fail(flagOff(flag))))

/** A gated service answers 403 to an organization without its premium feature (the operator is never gated). */
export const requireFeature = (def: AnyResource, principal: Principal, organizationId: unknown) =>
  Effect.gen(function*() {
    if (!def.premiumFeature || isOperator(principal) || typeof organizationId !== "string") return
    if (!(yield* hasFeature(def, organizationId))) return yield* Effect.fail(featureOff(def))
  })

/**
 * The premium-feature gate of a write, before its body is validated: an organization without
 * the feature hears 403 whatever else is wrong with the body. The organization is the one the
 * body names in `ownerKey` (one the principal acts in, 403 otherwise); where the body names none,
 * or the owner comes from another input, the principal's organizations: when none of them has
 * the feature, no body could succeed. The operator is never gated.
 */
export const requireFeatureBeforeBody = (def: AnyResource, principal: Principal, body: unknown, ownerKey: string | undefined) =>
  Effect.gen(function*() {
    if (!def.premiumFeature || isOperator(principal)) return
    const named = ownerKey !== undefined && isPlainObject(body) ? body[ownerKey] : undefined
    if (typeof named === "string" && named !== "") {
      yield* requireOrganization(principal, named)
      return yield* requireFeature(def, principal, named)
    }
    const orgs = organizationsOf(principal)
    if (orgs === "all") return
    for (const org of orgs) if (yield* hasFeature(def, org)) return
    return yield* Effect.fail(featureOff(def))
  })

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
      if (c.field !== owner) return true
      if (c._tag === "Compare") return c.op !== "eq" || allowed(c.value)
      if (c._tag === "Prefix") return c.negate
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
      // Values shown once are never selectable; outputs a resource presents itself are.
      selectable: Object.keys(def.hooks.present ? def.outputFields : def.queryFields).filter((f) =>
        !Object.hasOwn(def.viewParams ?? {}, f)
      )
    })
    if (Either.isLeft(parsed)) return yield* Effect.fail(parsed.left)
    const view = yield* resolveView(def, parsed.right.view)
    let query = yield* scopeQuery(def, yield* featureScope(def, principal), parsed.right.query)
    if (def.hooks.find) query = yield* def.hooks.find(principal, query, parsed.right.params)
    const select = query.select
    const output = (rows: ReadonlyArray<S["stored"]>) => rows.map((r) => selectFields(outputOf(def, r, view), select))
    return { query, output }
  })

/** A find: a page of `{ total, limit, skip, data }`. */
export const find = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, principal: Principal, rawQuery: Record<string, unknown>) =>
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, "find")
    const { output, query } = yield* prepareFind(def, principal, rawQuery)
    const page = yield* (yield* repoOf(def)).find(query)
    return { ...page, data: output(page.data) } satisfies Page<Row>
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
      data: output(rows),
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
  Effect.gen(function*() {
    yield* ensureMethod(def, principal, "get")
    const view = yield* resolveView(def, at.query)
    const row = yield* loadVisible(def, principal, id, at)
    const output = outputOf(def, row, view)
    return def.hooks.expand ? yield* def.hooks.expand(principal, row, output) : output
  })

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

/** Counts the organization's rows against its quota, inside the creating transaction. */
export const checkQuota = (
  def: Pick<AnyResource, "quota" | "ownerField" | "tableDef">,
  organizationId: string,
  extra: ReadonlyArray<Condition> = []
) =>
  Effect.gen(function*() {
    const quota = def.quota
    if (!quota || def.ownerField === undefined) return
    const name = typeof quota === "string" ? quota : quota.name
    // Two concurrent creates must not both see "one below the limit".
    yield* Effect.flatMap(UnitOfWork, (uow) => uow.lock(`quota:${name}:${organizationId}`))
    const limit = typeof quota === "string"
      ? yield* Effect.flatMap(OrganizationLimits, (limits) => limits.quotaOf(organizationId, quota))
      : typeof quota.limit === "number" ? quota.limit : yield* quota.limit(organizationId)
    if (limit === undefined) return
    const used = yield* (yield* Storage).repository(def.tableDef).count([eq(def.ownerField, organizationId), ...extra])
    if (used >= limit) {
      return yield* Effect.fail(
        new QuotaExceeded({
          message: `Quota '${name}' reached: the organization may have at most ${limit}`,
          quota: name,
          limit
        })
      )
    }
  })

/** An organization named in an input must exist (the operator can name any id). */
export const requireExistingOrganization = (organizationId: string) =>
  Effect.gen(function*() {
    if (!(yield* Effect.flatMap(OrganizationLimits, (limits) => limits.exists(organizationId)))) {
      return yield* Effect.fail(
        new InvalidInput({
          message: `Invalid organization_id: no organization '${organizationId}'`,
          errors: { organization_id: "is not an existing organization" }
        })
      )
    }
  })

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
        return outputOf(def, stored, view, prepared.reveal)
      })
    ).pipe(
      Effect.tap((out) => committed(def, out)),
      // A visitor's write answers only what the declaration lists (never through the host API, whose callers hold no public key).
      Effect.map((out): S["output"] =>
        principal._tag === "PublicKey" && def.endUsers?.publicAnswer ? pick(out, def.endUsers.publicAnswer) as S["output"] : out
      )
    )
  })

const write = <S extends Shape, R, C>(
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
        return outputOf(def, stored, view)
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
        return outputOf(def, removed.value, view)
      })
    ).pipe(Effect.tap((out) => committed(def, out)))
  })

export type ServiceEffect<A, R = never> = Effect.Effect<A, DomainError, CoreServices | R>

export const decodeWith = (schema: AnySchema) => (u: unknown) => decode(schema, u)
