import * as Effect from "effect/Effect"
import { InvalidInput } from "../Domain/Errors.js"
import { UrlSigner } from "./Secrets.js"
import type { Row, TableDef } from "./Ports.js"

/**
 * Cursor paging of a find (`$cursor`): keyset pages in the order of `created_at`, then the
 * table's key. The cursor is opaque to clients; inside it is base64url JSON of a version tag,
 * the position (the last row's order values) and a check value: a MAC, with the server's key,
 * of the version, the service, the query the cursor was issued for and the position. It binds
 * the cursor to its query: a client repeats the same filters and `$limit` on every page, and a
 * cursor sent with another query is refused instead of paging a different result from a
 * position that means nothing there. Keyed, so a client cannot make a cursor of its own, by
 * editing the position or the query and computing the check again.
 */

/** 2: the check value is keyed (1 was a plain digest of the query, which anyone could compute). */
const VERSION = 2
const PURPOSE = "cursor"
/** Far above any real cursor (a digest and three values), far below anything costly to decode. */
const MAX_LENGTH = 2048
const canonicalIso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** The order of a cursor walk: creation time, then the table's key, so no two rows tie. */
export const keysetFields = (table: TableDef): ReadonlyArray<string> => ["created_at", ...table.key]

export interface CursorRequest {
  /** The position to continue after; none on the first page. */
  readonly after: ReadonlyArray<string> | undefined
  /** The query without `$cursor`: what the page is of. */
  readonly query: Record<string, unknown>
  /** What the check value covers besides the version and the position: the service and the query. */
  readonly binding: string
}

const invalid = (key: string, message: string) =>
  new InvalidInput({ message: `Invalid query: ${key} ${message}`, errors: { [key]: message } })

const malformed = invalid("$cursor", "is not a valid cursor: send the cursor of the previous page as it was given, or an empty one to start")

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** The query with its keys sorted at every level: the order parameters are sent in does not matter. */
const canonical = (u: unknown): unknown =>
  Array.isArray(u)
    ? u.map(canonical)
    : isPlainObject(u)
    ? Object.fromEntries(Object.keys(u).sort().map((k) => [k, canonical(u[k])]))
    : u

const base64url = (bytes: Uint8Array): string => {
  let s = ""
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

const fromBase64url = (s: string): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) return undefined
  try {
    const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"))
    return Uint8Array.from(bin, (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

/** The service and the query, canonical: the order parameters are sent in does not matter. */
const bindingOf = (path: string, query: Record<string, unknown>) => JSON.stringify([path, canonical(query)])

/**
 * The check value of a position under a binding. Only the check travels, never the query
 * itself: cursors stay short, and filter values (an organization's own user id) do not travel
 * in URLs and logs a second time.
 */
const checkOf = (binding: string, after: ReadonlyArray<unknown>) =>
  Effect.flatMap(UrlSigner, (signer) => signer.mac(PURPOSE, JSON.stringify([VERSION, binding, after])))

/** Compares without stopping at the first difference: the time taken tells nothing of the expected value. */
const sameCheck = (a: string, b: string) => {
  let diff = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0)
  return diff === 0
}

const decodePosition = (token: string, fields: number): { readonly check: string; readonly after: Array<string> } | undefined => {
  if (token.length > MAX_LENGTH) return undefined
  const bytes = fromBase64url(token)
  if (!bytes) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  } catch {
    return undefined
  }
  if (!isPlainObject(parsed) || parsed.v !== VERSION || typeof parsed.c !== "string") return undefined
  const k = parsed.k
  if (!Array.isArray(k) || k.length !== fields || !k.every((v): v is string => typeof v === "string")) return undefined
  if (!canonicalIso.test(k[0]!) || Number.isNaN(Date.parse(k[0]!))) return undefined
  return { check: parsed.c, after: k }
}

/**
 * Reads `$cursor` and checks what may come with it. `$sort` and `$skip` may not: the order is
 * fixed, and the position replaces the offset.
 */
export const readCursor = (
  path: string,
  table: TableDef,
  raw: Record<string, unknown>
): Effect.Effect<CursorRequest, InvalidInput, UrlSigner> =>
  Effect.gen(function*() {
    for (const key of ["$sort", "$skip"]) {
      if (Object.hasOwn(raw, key)) {
        return yield* Effect.fail(
          invalid(key, "cannot be combined with $cursor: cursor pages are in created_at order and continue from the cursor")
        )
      }
    }
    const token = raw.$cursor
    if (typeof token !== "string") return yield* Effect.fail(malformed)
    const { $cursor: _cursor, ...query } = raw
    const binding = bindingOf(path, query)
    if (token === "") return { after: undefined, query, binding }
    const position = decodePosition(token, keysetFields(table).length)
    if (!position) return yield* Effect.fail(malformed)
    if (!sameCheck(position.check, yield* checkOf(binding, position.after))) {
      return yield* Effect.fail(
        invalid("$cursor", "was not issued for this query: send the cursor as it was given, with the same filters and $limit on every page")
      )
    }
    return { after: position.after, query, binding }
  })

/** The cursor of the page after `last`. */
export const cursorAfter = (table: TableDef, binding: string, last: Row): Effect.Effect<string, never, UrlSigner> => {
  const after = keysetFields(table).map((f) => last[f])
  return Effect.map(
    checkOf(binding, after),
    (check) => base64url(new TextEncoder().encode(JSON.stringify({ v: VERSION, k: after, c: check })))
  )
}

/** A page of a cursor walk: no total (it would cost a count on every page); `cursor` is null after the last. */
export interface CursorPage<A> {
  readonly data: ReadonlyArray<A>
  readonly limit: number
  readonly cursor: string | null
}
