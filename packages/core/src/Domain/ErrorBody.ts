import type { DomainError, StoreUnavailable } from "./Errors.js"

/**
 * The contract's error body (`{ name, message, code, className, errors }`), one mapping from the
 * domain errors for every surface that reports them: the HTTP answers and the errors a host
 * calling the library in-process catches.
 */
export interface ErrorBody {
  readonly name: string
  readonly message: string
  readonly code: number
  readonly className: string
  readonly errors: Record<string, string>
}

const kinds = {
  // Not an error, but plain HTTP refused: a client that reads every answer as this body reads why.
  301: ["MovedPermanently", "moved-permanently"],
  400: ["BadRequest", "bad-request"],
  401: ["NotAuthenticated", "not-authenticated"],
  403: ["Forbidden", "forbidden"],
  404: ["NotFound", "not-found"],
  405: ["MethodNotAllowed", "method-not-allowed"],
  408: ["RequestTimeout", "request-timeout"],
  409: ["Conflict", "conflict"],
  413: ["PayloadTooLarge", "payload-too-large"],
  415: ["UnsupportedMediaType", "unsupported-media-type"],
  429: ["TooManyRequests", "too-many-requests"],
  500: ["GeneralError", "general-error"],
  503: ["Unavailable", "unavailable"]
} as const

export type ErrorStatus = keyof typeof kinds

export const errorBody = (code: ErrorStatus, message: string, errors: Record<string, string> = {}): ErrorBody => {
  const [name, className] = kinds[code]
  return { name, message, code, className, errors }
}

export const statusOf = (e: DomainError): ErrorStatus => {
  switch (e._tag) {
    case "InvalidInput":
      return 400
    case "NotAuthenticated":
      return 401
    case "Forbidden":
    case "QuotaExceeded":
      return 403
    case "NotFound":
      return 404
    case "Conflict":
      return 409
    case "TooManyRequests":
      return 429
  }
}

export const fromDomainError = (e: DomainError): ErrorBody => {
  const errors: Record<string, string> = "errors" in e && e.errors ? { ...e.errors } : {}
  if (e._tag === "QuotaExceeded") errors[e.quota] = `limit of ${e.limit} reached`
  return errorBody(statusOf(e), e.message, errors)
}

/** A store that cannot serve for now: a 503 naming why, so callers know to retry. */
export const fromStoreUnavailable = (e: StoreUnavailable): ErrorBody => errorBody(503, `Service unavailable: ${e.message}`)

/** A bug: the body never says more than this (the cause is logged or attached, never shown). */
export const generalErrorBody = (): ErrorBody => errorBody(500, "An internal error occurred")
