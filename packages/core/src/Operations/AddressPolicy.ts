/**
 * Which addresses an outbound call to a customer-chosen URL (webhook receiver, OAuth token
 * endpoint, export destination) may NOT reach without an allow-list entry (`WEBHOOK_ALLOW_HOSTS`).
 *
 * Those URLs are chosen by customers, so without this policy the service could be made to call
 * its own loopback, the private network it runs in, or the cloud metadata endpoint
 * (169.254.169.254) and leak the answer (SSRF). One policy serves both moments it is applied:
 * when a URL is configured (by name, here in core) and when a call is made (every resolved
 * address, in the webhooks package), so the two can't disagree on what "private" means.
 *
 * Pure (no `node:*`): IP literals are parsed here strictly, and whatever does not parse counts
 * as non-public, so a parsing gap fails closed.
 */

/** `[a, b, c, d]` of a dotted-decimal IPv4 address (exactly four octets 0-255, no leading zeros), or null. */
export const parseIPv4 = (s: string): ReadonlyArray<number> | null => {
  const parts = s.split(".")
  if (parts.length !== 4) return null
  const octets: Array<number> = []
  for (const p of parts) {
    // Leading zeros are refused: some stacks read `010` as octal, so its meaning is ambiguous.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null
    const n = Number(p)
    if (n > 255) return null
    octets.push(n)
  }
  return octets
}

const hexGroup = /^[0-9a-fA-F]{1,4}$/
const zoneId = /^[0-9A-Za-z._~-]+$/

/**
 * The eight 16-bit groups of an IPv6 address, or null: 1-4 hex digits a group, at most one
 * `::` (standing for at least one zero group), an optional dotted IPv4 tail only as the last
 * 32 bits, and an optional `%zone`, which is dropped.
 */
export const parseIPv6 = (input: string): ReadonlyArray<number> | null => {
  const percent = input.indexOf("%")
  const s = percent === -1 ? input : input.slice(0, percent)
  if (percent !== -1 && !zoneId.test(input.slice(percent + 1))) return null
  if (!s.includes(":")) return null
  const halves = s.split("::")
  if (halves.length > 2) return null
  const compressed = halves.length === 2
  const split = (half: string): Array<string> | null => {
    if (half === "") return []
    const parts = half.split(":")
    return parts.some((p) => p === "") ? null : parts
  }
  const left = split(halves[0]!)
  const right = compressed ? split(halves[1]!) : []
  if (left === null || right === null) return null

  const toGroups = (parts: ReadonlyArray<string>, last: boolean): Array<number> | null => {
    const groups: Array<number> = []
    for (const [i, p] of parts.entries()) {
      if (p.includes(".")) {
        // A dotted tail is only allowed as the very end of the address.
        if (!last || i !== parts.length - 1) return null
        const v4 = parseIPv4(p)
        if (!v4) return null
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!)
      } else {
        if (!hexGroup.test(p)) return null
        groups.push(parseInt(p, 16))
      }
    }
    return groups
  }
  const head = toGroups(left, !compressed)
  const tail = toGroups(right, true)
  if (head === null || tail === null) return null
  const explicit = head.length + tail.length
  if (compressed ? explicit > 7 : explicit !== 8) return null
  return [...head, ...Array<number>(8 - explicit).fill(0), ...tail]
}

/** 4 or 6 for an IP literal (IPv6 with or without URL brackets), 0 otherwise, as `net.isIP` answers. */
export const ipFamily = (host: string): 0 | 4 | 6 => {
  const h = normalizeHost(host)
  if (parseIPv4(h)) return 4
  if (parseIPv6(h)) return 6
  return 0
}

/** True when `host` (a URL hostname, brackets allowed) is an IPv4 or IPv6 literal rather than a name. */
export const isIpLiteral = (host: string): boolean => ipFamily(host) !== 0

const v4NonPublic = ([a, b, c]: ReadonlyArray<number>): boolean =>
  a === 0 || // "this network", incl. the unspecified 0.0.0.0
  a === 10 || // private
  a === 127 || // loopback
  (a === 100 && b! >= 64 && b! <= 127) || // CGNAT 100.64/10
  (a === 169 && b === 254) || // link-local, incl. the metadata endpoint 169.254.169.254
  (a === 172 && b! >= 16 && b! <= 31) || // private
  (a === 192 && b === 168) || // private
  (a === 192 && b === 0 && c === 0) || // IETF protocol assignments
  (a === 198 && (b === 18 || b === 19)) || // benchmarking
  a! >= 224 // multicast, reserved, broadcast

const v6NonPublic = (g: ReadonlyArray<number>): boolean => {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number]
  const embedded = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]
  // ::/96 (unspecified ::, loopback ::1, deprecated IPv4-compatible) and ::ffff:0:0/96
  // (IPv4-mapped): the first 80 bits are zero.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) return v4NonPublic(embedded(g6, g7))
    return true
  }
  // ::ffff:0:0/96 (IPv4-translated, RFC 2765/6052 SIIT): a translator reaches the embedded
  // IPv4 address, so it answers as that address does.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) return v4NonPublic(embedded(g6, g7))
  // Anything else under ::/64 (not an assigned global prefix) embeds or means nothing public.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0) return true
  // NAT64 64:ff9b::/96 reaches the embedded IPv4 address.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return v4NonPublic(embedded(g6, g7))
  }
  // Local-use NAT64 64:ff9b:1::/48 (RFC 8215) embeds an IPv4 address where its operator chose,
  // and the rest of 64:ff9b::/32 is not allocated: refused whole.
  if (g0 === 0x64 && g1 === 0xff9b) return true
  // 6to4 2002::/16 reaches the IPv4 address in bits 16..47.
  if (g0 === 0x2002) return v4NonPublic(embedded(g1, g2))
  // Teredo 2001::/32 reaches a client through the inverted IPv4 address of its last 32 bits,
  // behind a NAT of unknown reach: refused whole.
  if (g0 === 0x2001 && g1 === 0) return true
  if ((g0 & 0xfe00) === 0xfc00) return true // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return true // link-local fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return true // deprecated site-local fec0::/10
  if ((g0 & 0xff00) === 0xff00) return true // multicast
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return true // discard-only 100::/64
  if (g0 === 0x2001 && g1 === 0xdb8) return true // documentation
  return false
}

/**
 * True when `address` (a literal IPv4 or IPv6 address, without brackets) is loopback, private,
 * link-local, CGNAT, unspecified, multicast or otherwise not a public unicast address, including
 * the IPv4-mapped (dotted or hex), IPv4-translated, NAT64 and 6to4 forms of those, and every
 * other form whose reach depends on an embedded IPv4 address we cannot place (IPv4-compatible,
 * local-use NAT64, Teredo). Anything that is not an IP
 * address counts as non-public, so a parsing gap fails closed.
 */
export const isNonPublicAddress = (address: string): boolean => {
  const v4 = parseIPv4(address)
  if (v4) return v4NonPublic(v4)
  const v6 = parseIPv6(address)
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

/**
 * True when a URL hostname is non-public by its name alone: `localhost` and `*.localhost`
 * (RFC 6761 reserves them for loopback; a trailing root dot changes nothing), and IP literals
 * the address rule refuses. Other names are only known after resolution, so they pass here and
 * are checked again, address by address, when the call is made.
 */
export const isNonPublicHostName = (hostname: string): boolean => {
  const host = normalizeHost(hostname)
  if (isIpLiteral(host)) return isNonPublicAddress(host)
  const name = host.endsWith(".") ? host.slice(0, -1) : host
  return name === "localhost" || name.endsWith(".localhost")
}
