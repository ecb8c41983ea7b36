import {
  type DomainError,
  type ErrorBody,
  fromDomainError,
  fromStoreUnavailable,
  generalErrorBody,
  isDomainError,
  isStoreUnavailable
} from "@cmp/core"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"

/**
 * The errors of the host API: a failed call rejects with one of these classes, each carrying the
 * REST contract's `code`, `name`, `className` and `errors`, so a host tells them apart with
 * `instanceof` as a client does by status.
 */

/** A failure of a call, with the contract's `code`, `name`, `className` and `errors`. */
export class PlatformError extends Error implements ErrorBody {
  readonly code: number
  readonly className: string
  readonly errors: Record<string, string>
  constructor(body: ErrorBody, options?: { readonly cause?: unknown }) {
    super(body.message, options)
    this.name = body.name
    this.code = body.code
    this.className = body.className
    this.errors = body.errors
  }
}
/** 400: the input is invalid (`errors` names the fields). */
export class BadRequest extends PlatformError {}
/** 401: a credential was missing, malformed or expired. */
export class NotAuthenticated extends PlatformError {}
/** 403: not allowed: another organization, an operator-only action, a premium feature off, a count quota reached. */
export class Forbidden extends PlatformError {}
/** 404: no such record among those the principal may see. */
export class NotFound extends PlatformError {}
/** 409: a duplicate unique value, or a stale `version`. */
export class Conflict extends PlatformError {}
/** 429: a rate limit; `retryAfterSeconds` tells when to come back. */
export class TooManyRequests extends PlatformError {
  constructor(body: ErrorBody, readonly retryAfterSeconds: number) {
    super(body)
  }
}
/** 503: the store cannot serve for now (try again). */
export class Unavailable extends PlatformError {}
/** 500: a bug; `cause` holds what failed. */
export class GeneralError extends PlatformError {}

/** The class of each status a domain error is answered with (429 carries more: see `toPlatformError`). */
const classes: ReadonlyMap<number, typeof PlatformError> = new Map([
  [400, BadRequest],
  [401, NotAuthenticated],
  [403, Forbidden],
  [404, NotFound],
  [409, Conflict]
])

/** The exported error class of a domain failure. */
export const toPlatformError = (e: DomainError): PlatformError => {
  const body = fromDomainError(e)
  if (e._tag === "TooManyRequests") return new TooManyRequests(body, e.retryAfterSeconds)
  const Class = classes.get(body.code) ?? PlatformError
  return new Class(body, { cause: e })
}

/** What a failed call rejects with: its domain error's class, 503 for a store that cannot serve, else a 500. */
export const fromCause = (cause: Cause.Cause<unknown>): PlatformError => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && isDomainError(failure.value)) return toPlatformError(failure.value)
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect) && isStoreUnavailable(defect.value)) {
    return new Unavailable(fromStoreUnavailable(defect.value), { cause: defect.value })
  }
  return new GeneralError(generalErrorBody(), { cause: Cause.squash(cause) })
}
