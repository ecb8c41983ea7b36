/**
 * Which language a page is shown in: `?lang=`, else the `Accept-Language` header (an RFC 4647
 * "lookup" by quality), among the languages the center offers, else the first it lists, else
 * `en`. Pure, so the server and the tests call it alike.
 */

/** A language range of `Accept-Language` and its quality. */
export interface WeightedRange {
  readonly range: string
  readonly q: number
}

/** More ranges than any browser sends are not read (a header is client-controlled). */
const maxRanges = 64
const rangePattern = /^(?:\*|[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*)$/
const qPattern = /^q=(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/i

/**
 * The ranges of an `Accept-Language` header (RFC 9110 §12.5.4), highest quality first; among
 * equal qualities the header's order. Malformed entries, and ranges of quality 0 ("not
 * acceptable"), are left out.
 */
export const parseAcceptLanguage = (header: string | null | undefined): ReadonlyArray<WeightedRange> => {
  if (header === null || header === undefined) return []
  const ranges: Array<WeightedRange & { readonly index: number }> = []
  const entries = header.split(",", maxRanges)
  for (let index = 0; index < entries.length; index++) {
    const [rawRange, ...params] = entries[index].split(";")
    const range = rawRange.trim()
    if (!rangePattern.test(range)) continue
    let q = 1
    let malformed = false
    for (const param of params) {
      const p = param.trim()
      if (qPattern.test(p)) q = Number(p.slice(2))
      else malformed = true
    }
    if (malformed || q === 0) continue
    ranges.push({ range, q, index })
  }
  return ranges.sort((a, b) => b.q - a.q || a.index - b.index).map(({ range, q }) => ({ range, q }))
}

/**
 * RFC 4647 §3.4 lookup of one range among `available` tags, without case: the range itself,
 * then shorter by one subtag at a time (a single-letter subtag goes with the one after it), so
 * `fr-CA` finds `fr` but `fr` does not find `fr-CA`. Returns the tag as `available` spells it.
 */
export const lookupRange = (range: string, available: ReadonlyArray<string>): string | undefined => {
  if (range === "*") return undefined
  const byLower = new Map(available.map((tag) => [tag.toLowerCase(), tag] as const))
  let subtags = range.toLowerCase().split("-")
  while (subtags.length > 0) {
    const found = byLower.get(subtags.join("-"))
    if (found !== undefined) return found
    subtags = subtags.slice(0, -1)
    if (subtags.length > 0 && subtags[subtags.length - 1].length === 1) subtags = subtags.slice(0, -1)
  }
  return undefined
}

export interface LanguageChoice {
  /** `?lang=` of the request, when it has one. */
  readonly query?: string | null | undefined
  /** The request's `Accept-Language` header. */
  readonly acceptLanguage?: string | null | undefined
  /** The center's `languages`: empty or null means any language its `content` has texts for. */
  readonly languages?: ReadonlyArray<string> | null | undefined
  /** The languages `content` has texts for (`readContent(…).languages`). */
  readonly withTexts?: ReadonlyArray<string> | undefined
}

/** The page's language when nothing the visitor asked for is offered and the center lists none. */
export const fallbackLanguage = "en"

/**
 * The page's language. `?lang=` wins when it finds an offered language (looked up like a range,
 * so `?lang=fr-CA` finds `fr`); otherwise it is ignored and `Accept-Language` decides, range by
 * range in order of quality; when neither finds one, the center's first listed language, else
 * `en`. The offered languages are `languages`, or, when that is empty or null, those with texts.
 */
export const chooseLanguage = (choice: LanguageChoice): string => {
  const listed = choice.languages ?? []
  const offered = listed.length > 0 ? listed : (choice.withTexts ?? [])
  const query = choice.query?.trim()
  if (query !== undefined && query !== "" && query.length <= 35 && rangePattern.test(query)) {
    const found = lookupRange(query, offered)
    if (found !== undefined) return found
  }
  for (const { range } of parseAcceptLanguage(choice.acceptLanguage)) {
    const found = lookupRange(range, offered)
    if (found !== undefined) return found
  }
  return listed[0] ?? fallbackLanguage
}
