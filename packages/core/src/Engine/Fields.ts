import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

/**
 * How a field is stored and compared. Derived from the output schema so a resource's
 * columns are declared once: strings (ids, enums, ISO timestamps), numbers, booleans, and
 * everything else as JSON.
 */
/** `bytes`: a file's bytes (`Uint8Array`), declared by hand, never derived from a schema. */
export type FieldKind = "string" | "timestamp" | "number" | "boolean" | "json" | "bytes"

export interface FieldInfo {
  readonly kind: FieldKind
  readonly nullable: boolean
  /**
   * A number column that is not a 32-bit integer: `bigint` for a counter that may outgrow one,
   * `real` for a fraction. Only the column type depends on it (checked by the schema contract).
   */
  readonly storage?: "bigint" | "real"
}

const unwrap = (ast: AST.AST): AST.AST => {
  switch (ast._tag) {
    case "Refinement":
      return unwrap(ast.from)
    case "Transformation":
      return unwrap(ast.to)
    case "Suspend":
      return unwrap(ast.f())
    default:
      return ast
  }
}

const isTimestamp = (ast: AST.AST): boolean =>
  AST.getIdentifierAnnotation(ast).pipe((o) => o._tag === "Some" && o.value === "Timestamp") ||
  (ast._tag === "Refinement" && isTimestamp(ast.from))

const kindOf = (ast: AST.AST): { kind: FieldKind; nullable: boolean } => {
  if (isTimestamp(ast)) return { kind: "timestamp", nullable: false }
  const a = unwrap(ast)
  switch (a._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return { kind: "string", nullable: false }
    case "NumberKeyword":
      return { kind: "number", nullable: false }
    case "BooleanKeyword":
      return { kind: "boolean", nullable: false }
    case "Literal":
      if (a.literal === null) return { kind: "json", nullable: true }
      if (typeof a.literal === "string") return { kind: "string", nullable: false }
      if (typeof a.literal === "number") return { kind: "number", nullable: false }
      if (typeof a.literal === "boolean") return { kind: "boolean", nullable: false }
      return { kind: "json", nullable: false }
    case "UndefinedKeyword":
      return { kind: "json", nullable: true }
    case "Union": {
      let nullable = false
      const kinds = new Set<FieldKind>()
      for (const m of a.types) {
        const u = unwrap(m)
        if (isTimestamp(m)) {
          kinds.add("timestamp")
          continue
        }
        if ((u._tag === "Literal" && u.literal === null) || u._tag === "UndefinedKeyword") {
          nullable = true
          continue
        }
        const k = kindOf(u)
        nullable ||= k.nullable
        kinds.add(k.kind)
      }
      return { kind: kinds.size === 1 ? [...kinds][0]! : "json", nullable }
    }
    default:
      return { kind: "json", nullable: false }
  }
}

/** The fields of a struct schema with their storage kind. */
export const fieldsOf = (schema: Schema.Schema.Any): Record<string, FieldInfo> => {
  const ast = unwrap(schema.ast)
  if (ast._tag !== "TypeLiteral") throw new Error(`fieldsOf: not a struct schema (${ast._tag})`)
  const out: Record<string, FieldInfo> = {}
  for (const ps of ast.propertySignatures) {
    const k = kindOf(ps.type)
    out[String(ps.name)] = { kind: k.kind, nullable: k.nullable || ps.isOptional }
  }
  return out
}

/** Whether `null` is a value of the type (`undefined`, which an optional field adds, is not). */
const allowsNull = (ast: AST.AST): boolean => {
  const a = unwrap(ast)
  if (a._tag === "Literal") return a.literal === null
  if (a._tag === "Union") return a.types.some(allowsNull)
  return a._tag === "UnknownKeyword" || a._tag === "AnyKeyword"
}

/**
 * The optional fields of an output that are never null (`gpc_conflict: true` or absent): their
 * NULL column leaves them out of the output. JSON fields are left as they are stored.
 */
export const neverNullFields = (schema: Schema.Schema.Any): ReadonlySet<string> => {
  const ast = unwrap(schema.ast)
  if (ast._tag !== "TypeLiteral") return new Set()
  const out = new Set<string>()
  for (const ps of ast.propertySignatures) {
    if (ps.isOptional && !allowsNull(ps.type) && kindOf(ps.type).kind !== "json") out.add(String(ps.name))
  }
  return out
}
