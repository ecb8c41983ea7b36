import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Forbidden, InvalidInput } from "../Domain/Errors.js"
import type { DomainError } from "../Domain/Errors.js"
import { type Row } from "./Ports.js"
import { endUserCredentialOf, isOperator, type Principal } from "./Principal.js"
import { type AnyResource } from "./Resource.js"
import { type AnySchema, type CoreServices, type Method } from "./Shape.js"

export const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const ignoredOnWrite = new Set(["id", "created_at", "updated_at", "version"])

export const methodNotAllowed = (def: AnyResource, method: Method) =>
  new Forbidden({ message: `Method '${method}' is not allowed on ${def.path}` })

export const ensureMethodFor = (def: AnyResource, principal: Principal, method: Method): Effect.Effect<void, Forbidden> =>
  ensureMethod(def, principal, method)

export const ensureMethod = (def: AnyResource, principal: Principal, method: Method): Effect.Effect<void, Forbidden> => {
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
export const decodeBody = (
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

export type ServiceEffect<A, R = never> = Effect.Effect<A, DomainError, CoreServices | R>

export const decodeWith = (schema: AnySchema) => (u: unknown) => decode(schema, u)
