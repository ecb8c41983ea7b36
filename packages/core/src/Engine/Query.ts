import * as Either from "effect/Either"
import { InvalidInput } from "../Domain/Errors.js"
import type { FieldInfo } from "./Fields.js"

/**
 * The typed find query. The HTTP adapter tokenises the query string the way `qs` does
 * (what Feathers clients send); this module validates that object against the resource's
 * fields, so only known fields with well-typed values ever reach a store.
 */

export type Scalar = string | number | boolean | null

export type CompareOp = "eq" | "ne" | "lt" | "lte" | "gt" | "gte"

export type Condition =
  | { readonly _tag: "Compare"; readonly field: string; readonly op: CompareOp; readonly value: Scalar }
  | { readonly _tag: "In"; readonly field: string; readonly negate: boolean; readonly values: ReadonlyArray<Scalar> }
  /** Each branch is a conjunction; the query matches when any branch does. */
  | { readonly _tag: "Or"; readonly branches: ReadonlyArray<ReadonlyArray<Condition>> }
  /**
   * A text column starts (or, negated, does not start) with `value`, compared exactly (case
   * and all); negated, NULL matches. Internal only: a client's query never makes one.
   */
  | { readonly _tag: "Prefix"; readonly field: string; readonly negate: boolean; readonly value: string }
  /**
   * The JSON array in `field` holds only elements among `values` (an empty array does);
   * negated, some element is not among them. Internal only.
   */
  | { readonly _tag: "AllIn"; readonly field: string; readonly negate: boolean; readonly values: ReadonlyArray<string> }
  /**
   * A semi-join: some row of `table` (negated: none) has, in each pair of `link`, its column
   * equal to this row's, and meets `where` (conditions on `table`'s columns). A store reads it
   * through `table`'s key or indexes, row by row of the outer table. Internal only.
   */
  | {
    readonly _tag: "Exists"
    readonly table: LinkedTable
    readonly link: ReadonlyArray<readonly [outer: string, inner: string]>
    readonly where: ReadonlyArray<Condition>
    readonly negate: boolean
  }

/** The table of a semi-join: its name and columns (a `TableDef` is one). */
export interface LinkedTable {
  readonly table: string
  readonly fields: Readonly<Record<string, FieldInfo>>
}

export interface SortKey {
  readonly field: string
  readonly direction: 1 | -1
}

/**
 * Keyset paging: the rows in ascending order of `fields` (non-null columns whose last ones form
 * the table's key, so no two rows tie), strictly after the position `after` when given (one
 * value per field). A store pages by comparing with the position, never by skipping rows, so a
 * walk stays correct while rows are added.
 */
export interface Keyset {
  readonly fields: ReadonlyArray<string>
  readonly after?: ReadonlyArray<Scalar> | undefined
}

export interface FindQuery {
  readonly where: ReadonlyArray<Condition>
  readonly sort: ReadonlyArray<SortKey>
  readonly limit: number
  readonly skip: number
  /** When given, it is the order and the start of the page: `sort` and `skip` are not used. */
  readonly keyset?: Keyset | undefined
  readonly select?: ReadonlyArray<string>
  /** `false` for internal look-ups that need no total: the store skips the count. */
  readonly count?: boolean
  /** `false` for internal look-ups whose row order does not matter: the store skips sorting. */
  readonly ordered?: boolean
}

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 1000
/** The largest `$skip`: beyond it every page is empty anyway, and it fits every store's integer. */
export const MAX_SKIP = 2_147_483_647

export const emptyQuery: FindQuery = { where: [], sort: [], limit: DEFAULT_LIMIT, skip: 0 }

export const eq = (field: string, value: Scalar): Condition => ({ _tag: "Compare", field, op: "eq", value })
export const gte = (field: string, value: Scalar): Condition => ({ _tag: "Compare", field, op: "gte", value })
export const inList = (field: string, values: ReadonlyArray<Scalar>): Condition => ({
  _tag: "In",
  field,
  negate: false,
  values
})

export const lte = (field: string, value: Scalar): Condition => ({ _tag: "Compare", field, op: "lte", value })
export const lt = (field: string, value: Scalar): Condition => ({ _tag: "Compare", field, op: "lt", value })
export const gt = (field: string, value: Scalar): Condition => ({ _tag: "Compare", field, op: "gt", value })
export const notInList = (field: string, values: ReadonlyArray<Scalar>): Condition => ({ _tag: "In", field, negate: true, values })
/** Any branch holds; no branch: nothing matches. */
export const anyOf = (...branches: ReadonlyArray<ReadonlyArray<Condition>>): Condition => ({ _tag: "Or", branches })
/** The JSON array in `field` holds only `values` (`negate`: some other element too). */
export const allIn = (field: string, values: ReadonlyArray<string>, negate = false): Condition => ({ _tag: "AllIn", field, negate, values })
/** Some row of `table` linked to this one meets `where` (`negate`: none does). */
export const exists = (
  table: LinkedTable,
  link: ReadonlyArray<readonly [outer: string, inner: string]>,
  where: ReadonlyArray<Condition>,
  negate = false
): Condition => ({ _tag: "Exists", table, link, where, negate })

/** The rows whose text `field` does not start with `value`. */
export const notPrefixed = (field: string, value: string): Condition => ({ _tag: "Prefix", field, negate: true, value })

export interface ParseOptions {
  readonly fields: Readonly<Record<string, FieldInfo>>
  /** Extra `$`-parameters a service understands itself; they are returned, not rejected. */
  readonly passthrough?: ReadonlyArray<string>
  /**
   * View parameters: they choose how outputs look, so only `name=value` is allowed; they come
   * back in `view`, never as conditions.
   */
  readonly views?: ReadonlyArray<string>
  /** The fields `$select` may name (default: `fields`); outputs that are not columns too. */
  readonly selectable?: ReadonlyArray<string>
  readonly maxLimit?: number
  /** Filters on a value the service computes, not a column (`consent_state`); they come back in `filters`. */
  readonly filters?: ComputedFilters
}

/** The computed filters of a declaration, by name. */
export type ComputedFilters = Readonly<Record<string, ComputedFilter>>

/**
 * A query parameter that filters on a value a resource computes rather than stores (a consent
 * user's `consent_state`): `name=value`, `name=a&name=b` or `name[$in]=…`, of the values listed,
 * never inside `$or`. The parser only validates it; the resource's find hook turns it into
 * conditions.
 */
export interface ComputedFilter {
  readonly values: ReadonlyArray<string>
  /** What it filters on, for the OpenAPI document. */
  readonly description: string
}

export interface ParsedQuery {
  readonly query: FindQuery
  readonly params: Readonly<Record<string, unknown>>
  /** The view parameters given, as sent (their values are validated by the resource). */
  readonly view: Readonly<Record<string, string>>
  /** The computed filters given: name → the values accepted (any of them). */
  readonly filters: Readonly<Record<string, ReadonlyArray<string>>>
}

class QueryError {
  constructor(readonly path: string, readonly message: string) {}
}

const fail = (path: string, message: string): never => {
  throw new QueryError(path, message)
}

const operators: Record<string, CompareOp | "in" | "nin"> = {
  $ne: "ne",
  $lt: "lt",
  $lte: "lte",
  $gt: "gt",
  $gte: "gte",
  $in: "in",
  $nin: "nin"
}

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Own fields only: `constructor`, `toString`... are inherited by every object, never fields. */
const fieldOf = (options: ParseOptions, name: string): FieldInfo | undefined =>
  Object.hasOwn(options.fields, name) ? options.fields[name] : undefined

const notAView = (options: ParseOptions, path: string, name: string) => {
  if (options.views?.includes(name)) fail(path, `is a view parameter, not a field: only ${name}=<value> is allowed`)
}

/** qs turns `a[0]=x` into an array but large or sparse indices into an object: accept both. */
const asList = (u: unknown): ReadonlyArray<unknown> | undefined => {
  if (Array.isArray(u)) return u
  if (isPlainObject(u)) {
    const keys = Object.keys(u)
    if (keys.every((k) => /^\d+$/.test(k))) return keys.sort((a, b) => Number(a) - Number(b)).map((k) => u[k])
  }
  return undefined
}

const coerce = (path: string, info: FieldInfo, raw: unknown): Scalar => {
  if (raw === null || raw === "null") return null
  if (typeof raw !== "string" && typeof raw !== "number" && typeof raw !== "boolean") {
    return fail(path, "must be a single value")
  }
  switch (info.kind) {
    case "string":
      return String(raw)
    case "timestamp": {
      const ms = typeof raw === "string" && /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN
      return Number.isNaN(ms) ? fail(path, "must be an ISO 8601 date-time") : new Date(ms).toISOString()
    }
    case "number": {
      // Plain decimal notation only: `0x10` or `1e3` in a filter is more likely a mistake than intent.
      const n = typeof raw === "number" ? raw : typeof raw === "string" && /^-?\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : Number.NaN
      return Number.isFinite(n) ? n : fail(path, "must be a number")
    }
    case "boolean":
      if (raw === true || raw === "true") return true
      if (raw === false || raw === "false") return false
      return fail(path, "must be true or false")
    case "json":
    case "bytes":
      return fail(path, "cannot be used in a query")
  }
}

/**
 * A non-negative integer, at most `max`: a larger one, however many digits, is `max` (so
 * `$limit=5000` and `$limit=99999999999999999999` are both the largest page).
 */
const boundedInt = (path: string, raw: unknown, max: number): number => {
  if (typeof raw === "number") return Number.isInteger(raw) && raw >= 0 ? Math.min(raw, max) : fail(path, "must be a non-negative integer")
  const s = typeof raw === "string" ? raw.trim() : ""
  if (!/^\d+$/.test(s)) return fail(path, "must be a non-negative integer")
  // Past 16 digits a number is no longer exact, and it is above any bound anyway.
  return s.replace(/^0+(?=\d)/, "").length > 15 ? max : Math.min(Number(s), max)
}

const parseConditions = (
  input: Record<string, unknown>,
  options: ParseOptions,
  prefix: string,
  depth: number,
  params: Record<string, unknown> | undefined,
  view?: Record<string, string>,
  filters?: Record<string, ReadonlyArray<string>>
): Array<Condition> => {
  if (depth > 4) fail(prefix || "$or", "is nested too deeply")
  const out: Array<Condition> = []
  for (const [key, value] of Object.entries(input)) {
    const path = prefix ? `${prefix}.${key}` : key
    if (key === "$or") {
      const list = asList(value)
      if (!list || list.length === 0) fail(path, "must be a list of conditions")
      const branches = list!.map((b, i) => {
        if (!isPlainObject(b)) return fail(`${path}.${i}`, "must be an object of conditions")
        return parseConditions(b, options, `${path}.${i}`, depth + 1, undefined)
      })
      out.push({ _tag: "Or", branches })
      continue
    }
    if (key.startsWith("$")) {
      if (params && options.passthrough?.includes(key)) {
        params[key] = value
        continue
      }
      fail(path, depth === 0 ? "is not a supported query parameter" : "is not allowed here")
    }
    if (view && options.views?.includes(key) && typeof value === "string") {
      view[key] = value
      continue
    }
    const computed = options.filters !== undefined && Object.hasOwn(options.filters, key) ? options.filters[key] : undefined
    if (computed !== undefined) {
      if (filters === undefined) fail(path, "cannot be used inside $or")
      filters![key] = computedValues(key, computed, value)
      continue
    }
    notAView(options, path, key)
    const info = fieldOf(options, key)
    if (!info) fail(path, "is not a field of this resource")
    if (info!.kind === "json" || info!.kind === "bytes") fail(path, "cannot be used in a query")
    if (isPlainObject(value) && asList(value) === undefined) {
      for (const [op, operand] of Object.entries(value)) {
        const kind = Object.hasOwn(operators, op) ? operators[op] : undefined
        const opPath = `${path}.${op}`
        if (kind === undefined) fail(opPath, "is not a supported operator")
        if (kind === "in" || kind === "nin") {
          const list = asList(operand) ?? [operand]
          if (list.length > MAX_LIMIT) fail(opPath, `must have at most ${MAX_LIMIT} values`)
          out.push({
            _tag: "In",
            field: key,
            negate: kind === "nin",
            values: list.map((v, i) => coerce(`${opPath}.${i}`, info!, v))
          })
        } else {
          const v = coerce(opPath, info!, operand)
          if (v === null && kind !== "ne") fail(opPath, "cannot compare with null")
          out.push({ _tag: "Compare", field: key, op: kind as CompareOp, value: v })
        }
      }
      continue
    }
    const list = asList(value)
    if (list !== undefined) {
      // `field=a&field=b` is a list of accepted values.
      out.push({ _tag: "In", field: key, negate: false, values: list.map((v, i) => coerce(`${path}.${i}`, info!, v)) })
    } else {
      out.push({ _tag: "Compare", field: key, op: "eq", value: coerce(path, info!, value) })
    }
  }
  return out
}

/** The values of a computed filter: one, a list, or `$in`; each one of those it lists. */
const computedValues = (name: string, filter: ComputedFilter, value: unknown): ReadonlyArray<string> => {
  const onlyIn = isPlainObject(value) && asList(value) === undefined
  if (onlyIn && Object.keys(value).some((op) => op !== "$in")) fail(name, "supports only equality and $in")
  const raw = onlyIn ? (value as Record<string, unknown>).$in : value
  const list = asList(raw) ?? [raw]
  if (list.length === 0 || list.length > MAX_LIMIT) fail(name, `must have from 1 to ${MAX_LIMIT} values`)
  return list.map((v) =>
    typeof v === "string" && filter.values.includes(v) ? v : fail(name, `must be one of ${filter.values.join(", ")}`)
  )
}

const parseSort = (raw: unknown, options: ParseOptions): Array<SortKey> => {
  if (!isPlainObject(raw)) return fail("$sort", "must be of the form $sort[field]=1 or -1")
  return Object.entries(raw).map(([field, dir]) => {
    notAView(options, `$sort.${field}`, field)
    const info = fieldOf(options, field)
    if (!info) fail(`$sort.${field}`, "is not a field of this resource")
    if (info!.kind === "json" || info!.kind === "bytes") fail(`$sort.${field}`, "cannot be sorted on")
    const d = typeof dir === "string" || typeof dir === "number" ? String(dir).toLowerCase() : ""
    if (d === "1" || d === "asc") return { field, direction: 1 as const }
    if (d === "-1" || d === "desc") return { field, direction: -1 as const }
    return fail(`$sort.${field}`, "must be 1 or -1")
  })
}

const parseSelect = (raw: unknown, options: ParseOptions): Array<string> => {
  const list = typeof raw === "string" ? raw.split(",") : asList(raw)
  if (!list) return fail("$select", "must be a list of fields")
  return list!.map((f, i) => {
    if (typeof f === "string") notAView(options, `$select.${i}`, f)
    const known = typeof f === "string" && (options.selectable ? options.selectable.includes(f) : fieldOf(options, f) !== undefined)
    if (!known) return fail(`$select.${i}`, "is not a field of this resource")
    return f
  })
}

/** Validates a `qs`-parsed query object into a {@link FindQuery}. */
export const parseFindQuery = (
  input: Record<string, unknown>,
  options: ParseOptions
): Either.Either<ParsedQuery, InvalidInput> => {
  try {
    // Keyed by the query's names: no inherited entries (`constructor`, `__proto__`) to collide with.
    const params: Record<string, unknown> = Object.create(null)
    const view: Record<string, string> = Object.create(null)
    const rest: Record<string, unknown> = Object.create(null)
    let limit = DEFAULT_LIMIT
    let skip = 0
    let sort: Array<SortKey> = []
    let select: Array<string> | undefined
    for (const [key, value] of Object.entries(input)) {
      switch (key) {
        case "$limit":
          limit = boundedInt(key, value, options.maxLimit ?? MAX_LIMIT)
          break
        case "$skip":
          skip = boundedInt(key, value, MAX_SKIP)
          break
        case "$sort":
          sort = parseSort(value, options)
          break
        case "$select":
          select = parseSelect(value, options)
          break
        default:
          rest[key] = value
      }
    }
    const filters: Record<string, ReadonlyArray<string>> = Object.create(null)
    const where = parseConditions(rest, options, "", 0, params, view, filters)
    const query: FindQuery = select ? { where, sort, limit, skip, select } : { where, sort, limit, skip }
    return Either.right({ query, params, view, filters })
  } catch (e) {
    if (e instanceof QueryError) {
      return Either.left(
        new InvalidInput({ message: `Invalid query: ${e.path} ${e.message}`, errors: { [e.path]: e.message } })
      )
    }
    throw e
  }
}

/** Every field of the row a condition list mentions, including inside `$or` and the links of a semi-join. */
export const conditionFields = (where: ReadonlyArray<Condition>): Array<string> =>
  where.flatMap((c) =>
    c._tag === "Or" ? c.branches.flatMap(conditionFields) : c._tag === "Exists" ? c.link.map(([outer]) => outer) : [c.field]
  )
