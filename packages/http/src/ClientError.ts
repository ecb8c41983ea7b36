import { errorBody } from "./Errors.js"

/**
 * The raw answer to a request the host's HTTP parser cannot read, which never reaches the API
 * (Node's own is a bare 400): the contract's body and headers, like every other answer, then the
 * connection closes. `headersTooLarge` when the parser gave up on the size of the headers.
 */
export const unreadableRequestAnswer = (headersTooLarge: boolean): string => {
  const body = JSON.stringify(errorBody(400, headersTooLarge ? "The request headers are too large" : "The request is not valid HTTP"))
  return [
    "HTTP/1.1 400 Bad Request",
    "content-type: application/json; charset=utf-8",
    `content-length: ${new TextEncoder().encode(body).byteLength}`,
    "x-content-type-options: nosniff",
    "connection: close",
    "",
    body
  ].join("\r\n")
}
