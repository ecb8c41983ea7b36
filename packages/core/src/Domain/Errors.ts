import * as Schema from "effect/Schema"

/**
 * Domain errors. They carry no HTTP knowledge; `ErrorBody.ts` maps each tag to the code
 * and the Feathers-style error body.
 */

/**
 * Field path → what is wrong with it (`"consents.purposes.0.id": "is missing"`). Not
 * `Schema.Record`, whose decoder copies keys by assignment: a path that is a client's key
 * named `__proto__` would vanish from the answer.
 */
export const FieldErrors: Schema.Schema<{ readonly [x: string]: string }> = Schema.declare(
  (u: unknown): u is { readonly [x: string]: string } =>
    typeof u === "object" && u !== null && !Array.isArray(u) && Object.values(u).every((v) => typeof v === "string"),
  { identifier: "FieldErrors", jsonSchema: { type: "object", additionalProperties: { type: "string" } } }
)
export type FieldErrors = typeof FieldErrors.Type

export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  message: Schema.String,
  errors: Schema.optional(FieldErrors)
}) {}

export class NotAuthenticated extends Schema.TaggedError<NotAuthenticated>()("NotAuthenticated", {
  message: Schema.String
}) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String,
  errors: Schema.optional(FieldErrors)
}) {}

/** A count quota of the organization is reached (a 403 in the contract). */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  message: Schema.String,
  quota: Schema.String,
  limit: Schema.Number
}) {}

/** A rate quota is exhausted; `retryAfterSeconds` tells when to come back. */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number
}) {}

export type DomainError =
  | InvalidInput
  | NotAuthenticated
  | Forbidden
  | NotFound
  | Conflict
  | QuotaExceeded
  | TooManyRequests

const domainTags: ReadonlySet<string> = new Set<DomainError["_tag"]>([
  "InvalidInput", "NotAuthenticated", "Forbidden", "NotFound", "Conflict", "QuotaExceeded", "TooManyRequests"
])

/** One of the errors above, whatever carried it (a failure of an effect typed more loosely). */
export const isDomainError = (u: unknown): u is DomainError =>
  typeof u === "object" && u !== null && domainTags.has((u as { _tag?: string })._tag ?? "")

/**
 * The store cannot serve the request for now: the database refuses connections, lost one, is
 * read-only, full or shutting down. Stores die with it (infrastructure failures are defects of
 * the ports), translated from their driver's errors, so callers see why without knowing the
 * driver; the HTTP layer answers 503 with `Retry-After`. Any other defect is a bug.
 */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  message: Schema.String,
  reason: Schema.Literal("unreachable", "connection-lost", "read-only", "full", "busy", "io")
}) {}

export const isStoreUnavailable = (u: unknown): u is StoreUnavailable =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "StoreUnavailable"
