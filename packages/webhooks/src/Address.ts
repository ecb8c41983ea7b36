import * as net from "node:net"

/**
 * Which IP addresses a webhook may NOT be sent to without an allow-list entry.
 *
 * Receiver URLs are chosen by customers, so without this check a webhook could make the service
 * call its own loopback, the private network it runs in, or the cloud metadata endpoint
 * (169.254.169.254) and leak the answer through the attempt log (SSRF). Every address a name
 * resolves to is checked, because the connection may use any of them.
 */

/** `[a, b, c, d]` of a dotted IPv4 address, or null. */
const parseV4 = (s: string): ReadonlyArray<number> | null => {
  if (!net.isIPv4(s)) return null
  return s.split(".").map(Number)
}

/** The eight 16-bit groups of an IPv6 address (zone and embedded IPv4 tail handled), or null. */
const parseV6 = (input: string): ReadonlyArray<number> | null => {
  const s = input.replace(/%.*$/, "")
  if (!net.isIPv6(s)) return null
  let text = s
  // An embedded dotted IPv4 tail (`::ffff:127.0.0.1`) becomes two hex groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (tail) {
    const v4 = parseV4(tail[1]!)
    if (!v4) return null
    text = text.slice(0, tail.index) + ((v4[0]! << 8) | v4[1]!).toString(16) + ":" + ((v4[2]! << 8) | v4[3]!).toString(16)
  }
  const [head, rest] = text.includes("::") ? text.split("::") as [string, string] : [text, null]
  const left = head ? head.split(":") : []
  const right = rest === null ? [] : rest ? rest.split(":") : []
  const zeros = rest === null ? 0 : 8 - left.length - right.length
  const groups = [...left, ...Array<string>(zeros).fill("0"), ...right].map((g) => parseInt(g, 16))
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null
}

const v4NonPublic = ([a, b, c]: ReadonlyArray<number>): boolean =>
  a === 0 || // "this network", incl. the unspecified 0.0.0.0
  a === 10 || // private
  a === 127 || // loopback
  (a === 100 && b >= 64 && b <= 127) || // CGNAT 100.64/10
  (a === 169 && b === 254) || // link-local, incl. the metadata endpoint 169.254.169.254
  (a === 172 && b >= 16 && b <= 31) || // private
  (a === 192 && b === 168) || // private
  (a === 192 && b === 0 && c === 0) || // IETF protocol assignments
  (a === 198 && (b === 18 || b === 19)) || // benchmarking
  a >= 224 // multicast, reserved, broadcast

const v6NonPublic = (g: ReadonlyArray<number>): boolean => {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number]
  const embedded = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]
  // ::/96 (unspecified ::, loopback ::1, deprecated IPv4-compatible) and ::ffff:0:0/96
  // (IPv4-mapped): the first 80 bits are zero.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) return v4NonPublic(embedded(g6, g7))
    return true
  }
  // NAT64 64:ff9b::/96 reaches the embedded IPv4 address.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return v4NonPublic(embedded(g6, g7))
  }
  // 6to4 2002::/16 reaches the IPv4 address in bits 16..47.
  if (g0 === 0x2002) return v4NonPublic(embedded(g1, g2))
  if ((g0 & 0xfe00) === 0xfc00) return true // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return true // link-local fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return true // deprecated site-local fec0::/10
  if ((g0 & 0xff00) === 0xff00) return true // multicast
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return true // discard-only 100::/64
  if (g0 === 0x2001 && g1 === 0xdb8) return true // documentation
  return false
}

/**
 * True when `address` (a literal IPv4 or IPv6 address) is loopback, private, link-local, CGNAT,
 * unspecified, multicast or otherwise not a public unicast address, including the IPv4-mapped,
 * NAT64 and 6to4 forms of those. Anything that is not an IP address counts as non-public, so a
 * parsing gap fails closed.
 */
export const isNonPublicAddress = (address: string): boolean => {
  const v4 = parseV4(address)
  if (v4) return v4NonPublic(v4)
  const v6 = parseV6(address)
  if (v6) return v6NonPublic(v6)
  return true
}

/** A URL hostname without the brackets of an IPv6 literal, lower-cased. */
export const normalizeHost = (hostname: string): string => hostname.replace(/^\[|\]$/g, "").toLowerCase()

/** Exact, case-insensitive match of the URL's hostname against `WEBHOOK_ALLOW_HOSTS`. */
export const isAllowedHost = (hostname: string, allowHosts: ReadonlyArray<string>): boolean => {
  const host = normalizeHost(hostname)
  return allowHosts.some((h) => normalizeHost(h.trim()) === host)
}
