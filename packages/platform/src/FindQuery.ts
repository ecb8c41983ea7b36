import type { FindShape, Shape } from "@cmp/core"

/**
 * The find query of the host API, typed by the resource's declaration: the fields a find may
 * filter and sort on with values of their column's type, the output fields `$select` may name,
 * the view parameters, the computed filters and `$cursor` where the resource has them. It is the query the engine
 * parses (`@cmp/core` Query.ts), so what compiles is what the engine accepts, and the answer's
 * type follows `$select` and `$cursor`.
 */

/** A page of a find: `total` matching rows, `data` from `skip` on, at most `limit` of them. */
export interface Page<A> {
  readonly total: number
  readonly limit: number
  readonly skip: number
  readonly data: ReadonlyArray<A>
}

/** A page of a find by `$cursor`: `cursor` continues after it, `null` on the last page. */
export interface CursorPage<A> {
  readonly data: ReadonlyArray<A>
  readonly limit: number
  readonly cursor: string | null
}

/** A value a query compares a column with. */
type Scalar = string | number | boolean | null

/** What a declaration adds to a find; a shape written by hand adds nothing. */
type FindOf<S extends Shape> = S["find"] extends FindShape ? S["find"]
  : { readonly queryable: never; readonly view: {}; readonly cursor: false; readonly filters: {} }

/** The computed filters of a declaration (`consent_state`): name → the values it takes. */
type FiltersOf<S extends Shape> = NonNullable<FindOf<S>["filters"]>

/** A computed filter's condition: one value, any of several, or `$in`. */
export type ComputedCondition<V> = V | ReadonlyArray<V> | { readonly $in: ReadonlyArray<V> }

/** The output's columns and the queryable private ones. */
type ColumnOf<S extends Shape> = Extract<keyof S["output"] | FindOf<S>["queryable"], keyof S["stored"]>

/**
 * The fields a find may filter and sort on: columns holding a single value (JSON columns may
 * be neither), by their stored type, where an optional output field is nullable.
 */
export type FilterableField<S extends Shape> = {
  [K in ColumnOf<S>]-?: S["stored"][K] extends Scalar ? K : never
}[ColumnOf<S>] & string

/** The value a stored column holds (`null` where it is nullable). */
export type FieldValue<S extends Shape, K extends FilterableField<S>> = S["stored"][K]

/** The operators of a field holding `V`; ordering compares with a value, never with `null`. */
export interface Operators<V> {
  readonly $in?: ReadonlyArray<V>
  readonly $nin?: ReadonlyArray<V>
  readonly $ne?: V
  readonly $lt?: NonNullable<V>
  readonly $lte?: NonNullable<V>
  readonly $gt?: NonNullable<V>
  readonly $gte?: NonNullable<V>
}

/** Conditions on fields, all of which must hold; `$or` holds when any of its branches does. */
export type Where<S extends Shape> =
  & { readonly [K in FilterableField<S>]?: FieldValue<S, K> | Operators<FieldValue<S, K>> }
  & { readonly $or?: ReadonlyArray<Where<S>> }

/**
 * The output fields `$select` may name: the output's columns (a value shown once is never
 * selectable); where the resource has view parameters, it presents its outputs itself, and
 * every output field but the view parameters is.
 */
export type SelectableField<S extends Shape> =
  & ([keyof FindOf<S>["view"]] extends [never] ? Extract<keyof S["output"], keyof S["stored"]>
    : Exclude<keyof S["output"], keyof FindOf<S>["view"]>)
  & string

/** Whether the resource pages by `$cursor` too. */
type CursorPaged<S extends Shape> = FindOf<S>["cursor"] extends true ? true : false

/** What `$cursor` may be: a string on a resource that pages by cursor (`""` starts), nothing elsewhere. */
export type CursorOf<S extends Shape> = CursorPaged<S> extends true ? string | undefined : undefined

/** The fields `$select` names, or `undefined` for the whole output. */
export type SelectionOf<S extends Shape> = ReadonlyArray<SelectableField<S>> | undefined

/**
 * A find query of the resource. `Sel` is what `$select` names and `Cur` the `$cursor`, as the
 * call gives them, so that the answer's type can follow them.
 */
export type FindQueryOf<S extends Shape, Sel extends SelectionOf<S> = SelectionOf<S>, Cur extends CursorOf<S> = CursorOf<S>> =
  & Where<S>
  & { readonly [K in keyof FindOf<S>["view"]]?: FindOf<S>["view"][K] }
  & { readonly [K in keyof FiltersOf<S>]?: ComputedCondition<FiltersOf<S>[K]> }
  & {
    readonly $limit?: number
    readonly $skip?: number
    readonly $sort?: { readonly [K in FilterableField<S>]?: 1 | -1 }
    readonly $select?: Sel
  }
  & (CursorPaged<S> extends true ? { readonly $cursor?: Cur } : {})
  // A cursor page is in creation order and continues from its cursor.
  & ([Cur] extends [string] ? { readonly $sort?: never; readonly $skip?: never } : {})

/**
 * An output as `$select` leaves it: the fields named, and `id`, which the engine always keeps;
 * the whole output without `$select`.
 */
export type Selected<S extends Shape, Sel> = Sel extends ReadonlyArray<infer K>
  ? Pick<S["output"], Extract<K | "id", keyof S["output"]>>
  : S["output"]

/** The answer of a find: a page, or a cursor page when the query gives `$cursor`. */
export type Found<S extends Shape, Sel, Cur> = [Cur] extends [undefined] ? Page<Selected<S, Sel>>
  : [Cur] extends [string] ? CursorPage<Selected<S, Sel>>
  : Page<Selected<S, Sel>> | CursorPage<Selected<S, Sel>>
