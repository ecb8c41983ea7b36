import { errorBody, type ErrorStatus, fromStoreUnavailable, generalErrorBody, type StoreUnavailable } from "@cmp/core"
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
  json(503, fromStoreUnavailable(e), { "retry-after": "5" })

/** A bug's answer: the contract's 500, never a stack trace or SQL. */
export const internalErrorResponse = (headers: Record<string, string> = {}): ApiResponse => json(500, generalErrorBody(), headers)
