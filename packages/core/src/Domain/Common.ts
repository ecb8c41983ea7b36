import * as Schema from "effect/Schema"

/** Shared field schemas. Every one keeps `Type` equal to `Encoded`, so rows and JSON coincide. */

export const Id = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(255, { message: () => "must be at most 255 characters" })
)

/** ISO 8601 date-time; the service always writes UTC with milliseconds. */
export const Timestamp = Schema.String.pipe(
  Schema.filter((s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}T/.test(s), {
    message: () => "must be an ISO 8601 date-time"
  }),
  Schema.annotations({ identifier: "Timestamp" })
)

export const Version = Schema.Int.pipe(Schema.positive())

/** A human label: trimmed, non-empty, bounded. */
export const Name = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must not be empty" }),
  Schema.maxLength(255, { message: () => "must be at most 255 characters" })
)

export const Text = Schema.String.pipe(
  Schema.maxLength(10_000, { message: () => "must be at most 10000 characters" })
)

/** RFC 5322 `atext`: what a dot-atom local part is made of. */
const emailAtom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
/** An RFC 1035 host label: letters, digits, inner hyphens, at most 63 characters. */
const hostLabel = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
const emailPattern = new RegExp(
  `^${emailAtom}(?:\\.${emailAtom})*@(?:${hostLabel}\\.)+(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$`
)

/**
 * An address mail can be sent to: a dot-atom local part (no leading, trailing or doubled dot,
 * at most 64 characters), a host name of at least two labels whose last is a top-level domain
 * (letters, or its `xn--` form), at most 254 characters in all (RFC 5321). Quoted local parts,
 * address literals and non-ASCII addresses are refused: give a domain in its `xn--` form.
 */
export const isEmailAddress = (s: string): boolean =>
  s.length <= 254 && s.indexOf("@") <= 64 && emailPattern.test(s)

export const Email = Schema.String.pipe(
  Schema.filter(isEmailAddress, { message: () => "must be an email address", jsonSchema: { format: "email", maxLength: 254 } })
)

const parseUrl = (s: string): URL | undefined => {
  try {
    return new URL(s)
  } catch {
    return undefined
  }
}

export const Url = Schema.String.pipe(
  Schema.maxLength(2048),
  Schema.filter((s) => {
    const u = parseUrl(s)
    return u !== undefined && (u.protocol === "http:" || u.protocol === "https:")
  }, { message: () => "must be an http or https URL" })
)

export const HttpsUrl = Schema.String.pipe(
  Schema.maxLength(2048),
  Schema.filter((s) => parseUrl(s)?.protocol === "https:", { message: () => "must be an https URL" })
)

/** Stored in a 32-bit integer column on every database, so bounded here rather than failing there. */
export const MAX_INT32 = 2_147_483_647

export const NonNegativeInt = Schema.Int.pipe(
  Schema.nonNegative(),
  Schema.lessThanOrEqualTo(MAX_INT32, { message: () => `must be at most ${MAX_INT32}` })
)

export const PositiveInt = Schema.Int.pipe(
  Schema.positive(),
  Schema.lessThanOrEqualTo(MAX_INT32, { message: () => `must be at most ${MAX_INT32}` })
)

/**
 * An arbitrary JSON object (stored as JSON), kept as it came. Not `Schema.Record`: its decoder
 * copies each key by assignment, so a key named `__proto__` would be lost (or replace the
 * copy's prototype); the keys are a client's, any name is just a name.
 */
export const JsonObject: Schema.Schema<{ readonly [x: string]: unknown }> = Schema.declare(
  (u: unknown): u is { readonly [x: string]: unknown } => typeof u === "object" && u !== null && !Array.isArray(u),
  {
    identifier: "JsonObject",
    description: "a JSON object",
    message: () => "must be a JSON object",
    jsonSchema: { type: "object" }
  }
)

/** Output fields every versioned resource carries. */
export const Audit = {
  created_at: Timestamp,
  updated_at: Timestamp,
  version: Version
}

/** Optional in output and input; `null` means "not set". */
export const opt = <S extends Schema.Schema.Any>(s: S) => Schema.optional(Schema.NullOr(s))

/**
 * The ids the examples of the OpenAPI document refer to: made up, in the form the server makes
 * them (UUID version 7), so a reader sees where an id of their own goes.
 */
export const exampleIds = {
  organization: "0193a6f2-7c41-7d1e-9a3b-5f2e8c4d1a07",
  property: "0193a6f3-1d52-7a8c-b4e1-6c0f9d2e3b18",
  text: "0193a6f3-5e07-7c3d-8f2a-9b1e4d6c7a29",
  webhook: "0193a6f4-0a9c-7e41-a6d3-2f8b5c1e9d30",
  exportConfig: "0193a6f4-6b3e-7f02-9c5a-7d1e3b8f4a41",
  invitation: "0193a6f5-2c8d-7b16-b3f9-4e6a0d2c5b52"
} as const
