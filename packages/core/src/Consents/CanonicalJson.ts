/**
 * RFC 8785 canonical JSON, the text the consent log and proof reports take their SHA-256 of. It
 * is core's, pure JavaScript, so that every host and the engine's suites encode with this one.
 */

// Lone surrogates cannot be written as UTF-8: a stored string comes back with U+FFFD in their
// place, so the digest is taken over that same text or a row would never verify again.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const wellFormed = (s: string) => s.replace(LONE_SURROGATE, "\uFFFD")

const hasLoneSurrogate = (s: string) => {
  LONE_SURROGATE.lastIndex = 0
  return LONE_SURROGATE.test(s)
}

const revive = (_key: string, value: unknown): unknown => {
  if (typeof value === "string") return wellFormed(value)
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value)
    if (keys.some(hasLoneSurrogate)) {
      return Object.fromEntries(keys.map((k) => [wellFormed(k), (value as Record<string, unknown>)[k]]))
    }
  }
  return value
}

/**
 * The value as JSON sees it (`toJSON` applied, undefined and functions dropped, non-finite
 * numbers null), so that the canonical form of a value equals that of its stored JSON.
 */
const asJson = (value: unknown): unknown => {
  const json = JSON.stringify(value)
  return json === undefined ? null : JSON.parse(json, revive)
}

/** An object's keys in RFC 8785 order (by UTF-16 code units), each with its encoded `"key":`. */
interface Shape {
  readonly keys: ReadonlyArray<string>
  readonly sorted: ReadonlyArray<string>
  readonly prefixes: ReadonlyArray<string>
}

/**
 * The orders met so far, by the keys as `Object.keys` lists them: a table's rows all have one,
 * so sorting and encoding their keys is done once, not for every row. A few dozen at most: past
 * that, a new shape takes the place of the oldest.
 */
const shapes: Array<Shape> = []
let replaced = 0

const shapeOf = (keys: ReadonlyArray<string>): Shape | undefined => {
  search: for (const shape of shapes) {
    if (shape.keys.length !== keys.length) continue
    for (let i = 0; i < keys.length; i++) if (shape.keys[i] !== keys[i]) continue search
    return shape
  }
  if (!keys.every(isWellFormed)) return undefined
  const sorted = [...keys].sort()
  const shape: Shape = { keys, sorted, prefixes: sorted.map((key) => `${JSON.stringify(key)}:`) }
  if (shapes.length < 64) shapes.push(shape)
  else shapes[replaced++ % 64] = shape
  return shape
}

/**
 * RFC 8785 of plain JSON data (null, booleans, finite numbers, well-formed strings, arrays and
 * plain objects, an undefined member left out), the form every stored row takes; `undefined` for
 * anything else, which the general path below encodes. It gives the general path's text (a
 * property test holds it to the `canonicalize` library's) at a quarter of its cost: every
 * consent write digests two rows and an entry, and the general path sorts every object's keys
 * again and checks each string a character at a time.
 */
const plainJson = (value: unknown, depth: number): string | undefined => {
  switch (typeof value) {
    case "string":
      return isWellFormed(value) ? JSON.stringify(value) : undefined
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : undefined
    case "boolean":
      return value ? "true" : "false"
    case "object": {
      if (value === null) return "null"
      // Deeper than any row: a cycle, or data the general path may refuse.
      if (depth > 64) return undefined
      if (Array.isArray(value)) {
        let out = "["
        for (let i = 0; i < value.length; i++) {
          // An undefined item (a hole) is the general path's `null`.
          const item = plainJson(value[i], depth + 1)
          if (item === undefined) return undefined
          out += i === 0 ? item : `,${item}`
        }
        return `${out}]`
      }
      const proto = Object.getPrototypeOf(value)
      // A Date, a Buffer, a class: what its `toJSON` or the general path makes of it.
      if (proto !== Object.prototype && proto !== null) return undefined
      const record = value as Record<string, unknown>
      const shape = shapeOf(Object.keys(record))
      if (shape === undefined) return undefined
      let out = "{"
      for (let i = 0; i < shape.sorted.length; i++) {
        const member = record[shape.sorted[i]!]
        if (member === undefined) continue
        const text = plainJson(member, depth + 1)
        if (text === undefined) return undefined
        out += out.length === 1 ? shape.prefixes[i]! + text : `,${shape.prefixes[i]!}${text}`
      }
      return `${out}}`
    }
    default:
      return undefined
  }
}

const nativeWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed
const isWellFormed = (s: string): boolean => nativeWellFormed ? nativeWellFormed.call(s) : !hasLoneSurrogate(s)

/**
 * RFC 8785 of any value, as the `canonicalize` library (4.0) writes it: the encoder the digests
 * were first taken with, here because core imports nothing but `effect`. `toJSON` is applied, an
 * undefined or symbol member is left out (`null` in an array), a function's place reads
 * `undefined`; it throws on what JSON has no form for (a non-finite number, a lone surrogate, a
 * cycle). A property test holds it to the library.
 */
const strictJson = (value: unknown, seen: Set<object>): string | undefined => {
  if (typeof value === "number" && !Number.isFinite(value)) throw new RangeError("Not a finite number")
  if (typeof value === "string" && !isWellFormed(value)) throw new RangeError("A lone surrogate")
  if (value === null || typeof value !== "object") return JSON.stringify(value)
  if (seen.has(value)) throw new TypeError("A cycle")
  seen.add(value)
  const toJson: unknown = (value as { toJSON?: unknown }).toJSON
  let text: string | undefined
  if (typeof toJson === "function") {
    text = strictJson(toJson.call(value), seen)
  } else if (Array.isArray(value)) {
    text = `[${value.map((item: unknown) => strictJson(item === undefined || typeof item === "symbol" ? null : item, seen)).join(",")}]`
  } else {
    const record = value as Record<string, unknown>
    const members: Array<string> = []
    for (const key of Object.keys(record).sort()) {
      const member = record[key]
      if (member === undefined || typeof member === "symbol") continue
      members.push(`${strictJson(key, seen)}:${strictJson(member, seen)}`)
    }
    text = `{${members.join(",")}}`
  }
  seen.delete(value)
  return text
}

/** Any value through `strictJson`, made JSON by `asJson` first where it refuses it as it is. */
const generalJson = (value: unknown): string => {
  try {
    const direct = strictJson(value, new Set())
    // A function's place reads `undefined`: rare enough that any such text takes the long way.
    if (direct !== undefined && !direct.includes("undefined")) return direct
  } catch {
    // refused as it is: made JSON first, below
  }
  return strictJson(asJson(value), new Set()) ?? "null"
}

/**
 * RFC 8785 canonical JSON of any value; `null` for what JSON cannot show (undefined, a function).
 * Plain data (every stored row) takes `plainJson`; the rest (a Date, a lone surrogate, a number
 * JSON has no form for) the general path.
 */
export const canonicalJson = (value: unknown): string => plainJson(value, 0) ?? generalJson(value)
