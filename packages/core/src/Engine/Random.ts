/** Random tokens from Web Crypto (global in Node 20), so core needs no Node import. */
export const randomToken = (bytes = 32): string => {
  const buf = new Uint8Array(bytes)
  globalThis.crypto.getRandomValues(buf)
  let s = ""
  for (const b of buf) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

let lastMs = 0
let sequence = 0

/**
 * An id that sorts by creation: milliseconds, a per-process sequence within the same
 * millisecond, then randomness. Messages queued in one transaction share a timestamp, and the
 * delivery log still lists them in the order they were queued.
 */
export const sortableId = (ms: number): string => {
  sequence = ms === lastMs ? sequence + 1 : 0
  lastMs = ms
  let random = ""
  for (let i = 0; i < 6; i++) random += randomByte().toString(16).padStart(2, "0")
  return ms.toString(16).padStart(12, "0") + sequence.toString(16).padStart(6, "0") + random
}

// Random bytes drawn in blocks: one call into the system's generator per 4 KiB, not per id.
const pool = new Uint8Array(4096)
let poolAt = pool.length
const randomByte = (): number => {
  if (poolAt === pool.length) {
    globalThis.crypto.getRandomValues(pool)
    poolAt = 0
  }
  return pool[poolAt++]!
}

/**
 * A UUID version 7 (RFC 9562): milliseconds first, then randomness. Ids that grow with time
 * keep inserts at the end of the primary-key index instead of scattering them over every page
 * of a large table (SQLite then rewrites a few hot pages instead of reading cold ones).
 */
export const uuidV7 = (ms: number): string => {
  let hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0").slice(-12)
  for (let i = 6; i < 16; i++) {
    let byte = randomByte()
    if (i === 6) byte = 0x70 | (byte & 0x0f)
    if (i === 8) byte = 0x80 | (byte & 0x3f)
    hex += byte.toString(16).padStart(2, "0")
  }
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
