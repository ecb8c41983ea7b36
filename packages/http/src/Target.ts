import { errorResponse } from "./Errors.js"
import type { ApiResponse } from "./Message.js"

/**
 * What every host must agree on about a request's target and `Host`, so that the Express router,
 * the fetch adapter and whatever routes in front of them (a proxy, the host's own routes) all
 * see one path: the request target's, as sent.
 */

/** A host name, IPv4 or bracketed IPv6 address, with an optional port: nothing that could carry a path. */
const hostPattern = /^[a-z0-9_.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i

export const isHostHeader = (host: string): boolean => hostPattern.test(host)

/** `.`, `..` and their percent-encoded spellings, which a URL parser resolves away. */
const dotSegment = /^(?:\.|%2e){1,2}$/i

/**
 * A path a URL parser would rewrite before routing (dot segments, encoded or not, and `\`, which
 * WHATWG URLs read as `/`): no route has such a path, and answering it as the rewritten one
 * would let one path reach what another routes elsewhere.
 */
export const isRewrittenPath = (path: string): boolean => path.includes("\\") || path.split("/").some((s) => dotSegment.test(s))

/** Methods no route of the API takes and a web `Request` cannot even carry. */
export const unsupportedMethods: ReadonlySet<string> = new Set(["CONNECT", "TRACE", "TRACK"])

/** Every method some route of the API takes. */
const apiMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"

export const unsupportedMethodResponse = (method: string): ApiResponse =>
  errorResponse(405, `Method ${method} is not supported`, {}, { allow: apiMethods })
