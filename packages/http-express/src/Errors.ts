import type { DomainError } from "@cmp/core"

/** The Feathers-style error body of the contract. */
export interface ErrorBody {
  readonly name: string
  readonly message: string
  readonly code: number
  readonly className: string
  readonly errors: Record<string, string>
}

const kinds = {
  400: ["BadRequest", "bad-request"],
  401: ["NotAuthenticated", "not-authenticated"],
  403: ["Forbidden", "forbidden"],
  404: ["NotFound", "not-found"],
  405: ["MethodNotAllowed", "method-not-allowed"],
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

const unavailableCodes: Record<string, string> = {
  SQLITE_READONLY: "the database is read-only",
  SQLITE_FULL: "the database or its disk is full",
  SQLITE_IOERR: "the database cannot be read or written",
  SQLITE_CANTOPEN: "the database file cannot be opened",
  SQLITE_BUSY: "the database is busy",
  ECONNREFUSED: "the database refuses connections",
  ECONNRESET: "the connection to the database was lost",
  ETIMEDOUT: "the database does not answer"
}

/**
 * Whether a failure is the database being out of reach rather than a bug: a read-only or full
 * SQLite file, a lost or refused PostgreSQL connection, a server shutting down. Those answer
 * 503 with a reason, so clients know to retry; anything else stays a 500.
 */
export const unavailableReason = (defect: unknown): string | undefined => {
  if (typeof defect !== "object" || defect === null || (defect as { _tag?: unknown })._tag !== "SqlError") return undefined
  const cause = (defect as { cause?: { code?: unknown; message?: unknown } }).cause
  const code = String(cause?.code ?? "")
  const sqlite = Object.keys(unavailableCodes).find((c) => code === c || code.startsWith(`${c}_`))
  if (sqlite) return unavailableCodes[sqlite]
  // PostgreSQL: connection exceptions (08), resources (53), operator intervention (57P).
  if (/^(08|53|57P)/.test(code)) return "the database is unavailable"
  // `pg` answers a query on a connection that already died with "... is not queryable" (no code).
  if (/Connection terminated|connection.*(closed|ended)|not queryable|timeout exceeded when trying to connect/i.test(String(cause?.message ?? ""))) {
    return "the connection to the database was lost"
  }
  return undefined
}
