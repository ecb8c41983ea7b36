import { errorBody, type ErrorStatus, type StoreUnavailable } from "@cmp/core"
import { type ApiResponse, json } from "./Message.js"

export { type ErrorBody, errorBody, type ErrorStatus, fromDomainError, statusOf } from "@cmp/core"

/** The contract's error answer. */
export const errorResponse = (
  code: ErrorStatus,
  message: string,
  errors?: Record<string, string>,
  headers: Record<string, string> = {}
): ApiResponse => json(code, errorBody(code, message, errors), headers)

/** A store that cannot serve for now is a 503 with its reason, so clients know to retry. */
export const unavailableResponse = (e: StoreUnavailable): ApiResponse =>
  errorResponse(503, `Service unavailable: ${e.message}`, {}, { "retry-after": "5" })
