import { defaultPrivacyCenterRegulation, LanguageCode, PrivacyCenterPurpose, PrivacyCenterTexts, Regulation } from "@cmp/core"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

/**
 * What the page reads of a center's `content`, part by part: a part that does not pass
 * `PrivacyCenterContent`'s rules (stored before they were checked on write, say) is left out
 * rather than failing the page.
 */
export interface PageContent {
  /** Texts by language code, as `content` spells the code. */
  readonly texts: ReadonlyMap<string, PrivacyCenterTexts>
  /** The language codes `content` has texts for, in its order. */
  readonly languages: ReadonlyArray<string>
  readonly purposes: ReadonlyArray<PrivacyCenterPurpose>
  readonly regulation: string
  readonly noticeTextContentId: string | undefined
}

const decode = <A, I>(schema: Schema.Schema<A, I>) => {
  const run = Schema.decodeUnknownEither(schema)
  return (u: unknown): A | undefined => Either.getOrUndefined(run(u))
}
const isLanguageCode = Schema.is(LanguageCode)
const decodeTexts = decode(PrivacyCenterTexts)
const decodePurpose = decode(PrivacyCenterPurpose)
const decodeRegulation = decode(Regulation)
const isId = (u: unknown): u is string => typeof u === "string" && u.length > 0 && u.length <= 255

export const readContent = (content: unknown): PageContent => {
  const object = typeof content === "object" && content !== null && !Array.isArray(content) ? (content as Record<string, unknown>) : {}
  const texts = new Map<string, PrivacyCenterTexts>()
  for (const key of Object.keys(object)) {
    if (!isLanguageCode(key)) continue
    const value = decodeTexts(object[key])
    if (value !== undefined) texts.set(key, value)
  }
  const purposes: Array<PrivacyCenterPurpose> = []
  const seen = new Set<string>()
  for (const item of Array.isArray(object.purposes) ? object.purposes.slice(0, 100) : []) {
    const purpose = decodePurpose(item)
    if (purpose !== undefined && !seen.has(purpose.id)) {
      seen.add(purpose.id)
      purposes.push(purpose)
    }
  }
  return {
    texts,
    languages: [...texts.keys()],
    purposes,
    regulation: decodeRegulation(object.regulation) ?? defaultPrivacyCenterRegulation,
    noticeTextContentId: isId(object.notice_text_content_id) ? object.notice_text_content_id : undefined
  }
}
