import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { InvalidInput } from "../Domain/Errors.js"
import { type Row, Storage } from "./Ports.js"
import { type AnyResource, type Declared, type ResourceDef } from "./Resource.js"
import { type CoreServices, type Shape, type View } from "./Shape.js"
import { decode } from "./Bodies.js"
import { serviceWith } from "./Services.js"

export const pick = (row: Row, fields: ReadonlyArray<string>): Row => {
  const out: Row = {}
  for (const f of fields) if (Object.hasOwn(row, f)) out[f] = row[f]
  return out
}

/** Rows keep `null` for unset columns; outputs omit what their schema does not allow null for. */
export const toOutput = <S extends Shape>(def: Declared<S>, row: S["stored"], reveal?: Row): S["output"] => {
  const out: Row = {}
  const stored: Row = row
  for (const [k, info] of def.outputEntries) {
    const v = reveal && k in reveal ? reveal[k] : stored[k]
    if (v === undefined || (v === null && (!info.nullable || def.outputNeverNull.has(k)))) continue
    out[k] = v
  }
  // The one place a row becomes an output: the loop above keeps exactly the output's fields.
  return out as S["output"]
}

/** Values shown once (a secret on its creation) are part of the answer whoever presents the row. */
const revealed = <S extends Shape>(def: Declared<S>, output: S["output"], reveal: Row | undefined): S["output"] => {
  if (reveal === undefined) return output
  const shown: Row = { ...output }
  for (const [k, v] of Object.entries(reveal)) if (Object.hasOwn(def.outputFields, k)) shown[k] = v
  return shown as S["output"]
}

/** The output of a row in a request's view: the resource's own `present`, or its fields. */
export const outputOf = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, row: S["stored"], view: View, reveal?: Row): S["output"] =>
  def.hooks.present ? revealed(def, def.hooks.present(row, view), reveal) : toOutput(def, row, reveal)

/** The outputs of rows in a request's view: the resource's own `presentAll`, else each row's `outputOf`. */
export const outputsOf = <S extends Shape, R, C>(
  def: ResourceDef<S, R, C>,
  rows: ReadonlyArray<S["stored"]>,
  view: View
): Effect.Effect<ReadonlyArray<S["output"]>, never, CoreServices | R> =>
  def.hooks.presentAll ? def.hooks.presentAll(rows, view) : Effect.succeed(rows.map((r) => outputOf(def, r, view)))

/** The output of one row in a request's view, through `presentAll` when the resource has it. */
export const outputOfRow = <S extends Shape, R, C>(def: ResourceDef<S, R, C>, row: S["stored"], view: View, reveal?: Row) =>
  def.hooks.presentAll
    ? Effect.map(def.hooks.presentAll([row], view), (outs) => revealed(def, outs[0]!, reveal))
    : Effect.succeed(outputOf(def, row, view, reveal))

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

export const selectFields = (row: Row, fields: ReadonlyArray<string> | undefined): Row => {
  if (!fields) return row
  const out: Row = { id: row.id }
  for (const f of fields) if (f in row) out[f] = row[f]
  return out
}

export const repoOf = (def: AnyResource) => serviceWith(Storage, (s) => s.repository(def.tableDef))
