import { InvalidInput } from "@cmp/core"
import * as Effect from "effect/Effect"
import qs from "qs"

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "))
  } catch {
    return s
  }
}

/** The query string as Feathers clients send it, tokenised the way `qs` does. */
export const parseQuery = (raw: string): Effect.Effect<Record<string, unknown>, InvalidInput> => {
  if (raw === "") return Effect.succeed({})
  // `qs` drops a `__proto__` key whatever its options, which would turn a filter into a full
  // scan: name it and refuse it like any other unknown field.
  // Only names count: `regulation=__proto__` is a value like any other.
  const names = raw.split("&").map((part) => {
    const eq = part.indexOf("=")
    return eq === -1 ? part : part.slice(0, eq)
  })
  if (names.some((name) => /__proto__/i.test(name) || /__proto__/i.test(safeDecode(name)))) {
    return Effect.fail(
      new InvalidInput({
        message: "Invalid query: __proto__ is not a field of this resource",
        // Not keyed by the name itself: an `errors` key `__proto__` would be lost on assignment.
        errors: { query: "__proto__ is not a field of this resource" }
      })
    )
  }
  // `plainObjects`: keys such as `constructor` or `toString` reach the query validator (and are
  // rejected there as unknown fields) instead of being dropped silently, which made a full scan.
  return Effect.succeed(qs.parse(raw, {
    depth: 8,
    arrayLimit: 1000,
    parameterLimit: 2000,
    allowPrototypes: false,
    plainObjects: true
  }))
}
