import { parseIPv4, parseIPv6 } from "./AddressPolicy.js"

/**
 * What a limit by client address counts: one IPv4 address, or one IPv6 /64. A single IPv6
 * subscriber is given a /64 (often more) and may write from any of its 2^64 addresses, so
 * counting whole IPv6 addresses would give it as many allowances; an IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`, what a dual-stack socket reports) is that IPv4 address. A port a proxy
 * appended (`192.0.2.1:4711`, `[2001:db8::1]:4711`) and a zone (`%eth0`) are not part of it.
 * Anything else that is not an address (a proxy's `unknown`) counts as the text it is.
 */
export const limitingKey = (address: string): string => {
  const s = withoutPort(address.trim())
  if (parseIPv4(s) !== null) return s
  const groups = parseIPv6(s)
  if (groups === null) return s.toLowerCase()
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".")
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`
}

/** `[v6]:port` and `v4:port` without the port; anything else as it is. */
const withoutPort = (s: string): string => {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s)
  if (bracketed) return bracketed[1]!
  const v4 = /^([\d.]+):\d+$/.exec(s)
  return v4 ? v4[1]! : s
}
