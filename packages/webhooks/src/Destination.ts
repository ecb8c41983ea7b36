import type * as http from "node:http"
import type * as https from "node:https"
import * as net from "node:net"
import { isAllowedHost, isNonPublicAddress, normalizeHost } from "./Address.js"
import { errorMessage } from "./Answer.js"
import { cachedLookup, type LookupAddress } from "./LookupCache.js"

/**
 * Where a call to a customer's server may go, decided before a socket is opened, for both
 * senders: the URL and its protocol, the headers, the resolved addresses vetted against the
 * address policy, and request options that connect to those addresses only.
 */

export interface SendRequest {
  readonly url: string
  /** Default `POST`. */
  readonly method?: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** Total budget: DNS, connect, TLS, request and response headers. */
  readonly timeoutMs: number
  /** Local address the socket is bound to (`WEBHOOK_LOCAL_ADDRESS`). */
  readonly localAddress?: string | undefined
  /** Hostnames that may resolve to private or loopback addresses (`WEBHOOK_ALLOW_HOSTS`). */
  readonly allowHosts: ReadonlyArray<string>
  /** How much of the response body is kept (default 2 KiB, enough for the attempt log). */
  readonly maxResponseBytes?: number
}

// RFC 9110 token characters for header names.
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** Why `headers` can't be sent, or null. CR/LF in a value would let it inject headers. */
export const headerProblem = (headers: Readonly<Record<string, string>>): string | null => {
  for (const [name, value] of Object.entries(headers)) {
    if (!headerName.test(name)) return `refused: header name ${JSON.stringify(name)} is not a valid token`
    if (/[\r\n\0]/.test(value)) return `refused: header ${name} contains CR/LF`
  }
  return null
}

/**
 * Resolves the host and applies the address rules: every resolved address must be public
 * unless the hostname is allow-listed. Answers the vetted addresses or why the call is refused.
 */
const vet = async (
  host: string,
  hostname: string,
  allowHosts: ReadonlyArray<string>,
  localAddress: string | undefined
): Promise<ReadonlyArray<LookupAddress> | string> => {
  const literal = net.isIP(host)
  let addresses: ReadonlyArray<LookupAddress>
  if (literal !== 0) {
    addresses = [{ address: host, family: literal }]
  } else {
    try {
      addresses = await cachedLookup(host)
    } catch (e) {
      return `dns lookup of ${host} failed: ${errorMessage(e)}`
    }
    if (addresses.length === 0) return `dns lookup of ${host} returned no address`
  }
  if (!isAllowedHost(hostname, allowHosts)) {
    const bad = addresses.find((a) => isNonPublicAddress(a.address))
    if (bad) return `refused: ${bad.address} is a private/loopback/link-local address`
  }
  if (localAddress !== undefined) {
    // A socket bound to an IPv4 source can only reach IPv4 destinations (and likewise for v6).
    const family = net.isIP(localAddress)
    const usable = addresses.filter((a) => a.family === family)
    if (usable.length === 0) return `no address of ${host} matches the family of local address ${localAddress}`
    return usable
  }
  return addresses
}

/** A destination that passed every check, with the addresses the connection may use. */
export interface Target {
  readonly url: URL
  /** The hostname without brackets, lower-cased. */
  readonly host: string
  readonly secure: boolean
  readonly vetted: ReadonlyArray<LookupAddress>
}

export type Checked = Pick<SendRequest, "url" | "headers" | "allowHosts" | "localAddress">

/**
 * Everything decided before a socket is opened: the URL, its protocol, the headers and the
 * resolved, vetted addresses. Answers the target or why the call is refused.
 */
export const prepare = async (request: Checked): Promise<Target | string> => {
  let url: URL
  try {
    url = new URL(request.url)
  } catch {
    return `invalid url ${JSON.stringify(request.url)}`
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `refused: unsupported protocol ${url.protocol}`
  const problem = headerProblem(request.headers)
  if (problem) return problem
  const host = normalizeHost(url.hostname)
  const vetted = await vet(host, url.hostname, request.allowHosts, request.localAddress)
  if (typeof vetted === "string") return vetted
  return { url, host, secure: url.protocol === "https:", vetted }
}

/**
 * A `lookup` for `http.request` that answers only the already vetted addresses, so the
 * connection can't be re-resolved to another (private) address after the check, while the
 * request keeps the name for its Host header and TLS server name.
 */
const pinnedLookup = (addresses: ReadonlyArray<LookupAddress>): net.LookupFunction => (_hostname, options, callback) => {
  const wanted = options.family === 4 || options.family === 6
    ? addresses.filter((a) => a.family === options.family)
    : addresses
  if (wanted.length === 0) {
    const err: NodeJS.ErrnoException = new Error("no vetted address of the requested family")
    err.code = "ENOTFOUND"
    callback(err, "", 0)
    return
  }
  if (options.all) callback(null, wanted.map((a) => ({ address: a.address, family: a.family })))
  else callback(null, wanted[0]!.address, wanted[0]!.family)
}

/** Request options that connect to the vetted addresses only, bound to the configured source. */
export const requestOptions = (
  target: Target,
  request: Pick<SendRequest, "method" | "localAddress">,
  headers: Readonly<Record<string, string>>,
  agent: http.Agent | false
): https.RequestOptions => ({
  protocol: target.url.protocol,
  hostname: target.host,
  port: target.url.port || undefined,
  path: `${target.url.pathname}${target.url.search}`,
  method: request.method ?? "POST",
  headers,
  agent,
  lookup: pinnedLookup(target.vetted),
  ...(request.localAddress !== undefined ? { localAddress: request.localAddress } : {})
})
