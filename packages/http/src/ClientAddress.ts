import { header, type ApiRequest } from "./Message.js"

/**
 * Who sent a request, behind the proxies a deployment says are in front (`TRUST_PROXY`): every
 * limit by client address (failed sign-ins, public and consent-token writes) counts this one.
 */

/**
 * `trustProxy` as a number of proxies: `true` is one, `false` or unset none. Anything else (a
 * negative or fractional count) is a mistake of the host's, refused at once.
 */
export const proxyHops = (trustProxy: boolean | number | undefined): number => {
  if (trustProxy === undefined || trustProxy === false) return 0
  if (trustProxy === true) return 1
  if (!Number.isSafeInteger(trustProxy) || trustProxy < 0) {
    throw new RangeError(`trustProxy must be true, false or a number of proxies (a non-negative integer), got ${trustProxy}`)
  }
  return trustProxy
}

/**
 * The peer, or with `hops` proxies in front the address the farthest of them appended to
 * `X-Forwarded-For` (the `hops`-th value from the right): each proxy appends the address it was
 * reached from, so the values left of that one are whatever the client wrote. With fewer values
 * than proxies the request skipped some of them: the left-most value is then the closest to the
 * client any of them saw (never a value to the right, which is one of the proxies, shared by
 * everyone). Express's `trust proxy` with a number picks the same one.
 */
export const clientAddress = (request: ApiRequest, hops: number): string | undefined => {
  if (hops === 0) return request.remoteAddress
  const values = (header(request.headers, "x-forwarded-for") ?? "").split(",").map((v) => v.trim()).filter((v) => v !== "")
  if (values.length === 0) return request.remoteAddress
  return values[Math.max(0, values.length - hops)]
}

/** Whether the request came over TLS, or a trusted proxy says its client used it. */
export const isSecure = (request: ApiRequest, hops: number): boolean => {
  if (request.encrypted) return true
  if (hops === 0) return false
  return header(request.headers, "x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https"
}

/** A port a scheme implies, which an `Origin` leaves out and a `Host` may still name. */
const defaultPorts: Readonly<Record<string, string>> = { http: ":80", https: ":443" }

/**
 * Whether `origin` is the scheme and host this request was itself sent to: a same-origin request
 * from a page this server served (a hosted privacy center), whatever the organization's own
 * origins are. The host is the request's `Host`, which a browser sets from the page's URL.
 */
export const isOwnOrigin = (request: ApiRequest, origin: string, hops: number): boolean => {
  const host = header(request.headers, "host")?.trim().toLowerCase()
  if (host === undefined || host === "") return false
  const scheme = isSecure(request, hops) ? "https" : "http"
  const bare = host.endsWith(defaultPorts[scheme]!) ? host.slice(0, -defaultPorts[scheme]!.length) : host
  return origin.trim().toLowerCase() === `${scheme}://${bare}`
}
