import * as Schema from "effect/Schema"
import { Id, Name, Text } from "../Domain/Common.js"
import { Regulation } from "../Domain/Consent.js"
import { LanguageCode } from "../Domain/Property.js"

/**
 * What a privacy center's `content` means where it uses the keys the hosted page reads. The
 * resource stores `content` as any JSON object; this schema is what a write may be checked
 * against and what the page renderer reads. Keys it does not name are kept as they are
 * (`onExcessProperty: "preserve"`), so an organization's own keys survive a check.
 */

/** The texts of one language, plain text (rendered escaped, never as Markdown or HTML). */
export const PrivacyCenterTexts = Schema.Struct({
  title: Schema.optional(Name),
  intro: Schema.optional(Text),
  /** A purpose's name in this language, by the purpose's id. */
  purposes: Schema.optional(Schema.Record({ key: Id, value: Name }))
})
export type PrivacyCenterTexts = typeof PrivacyCenterTexts.Type

/** A purpose a visitor may choose on the page; `name` and `description` in the first language. */
export const PrivacyCenterPurpose = Schema.Struct({
  id: Id,
  name: Name,
  description: Schema.optional(Text)
})
export type PrivacyCenterPurpose = typeof PrivacyCenterPurpose.Type

/** The page lists each purpose once: a second entry with the same id would be a second checkbox. */
const PrivacyCenterPurposes = Schema.Array(PrivacyCenterPurpose).pipe(
  Schema.maxItems(100, { message: () => "must list at most 100 purposes" }),
  Schema.filter((purposes) => new Set(purposes.map((p) => p.id)).size === purposes.length, {
    message: () => "must list each purpose id once"
  })
)

/**
 * `content`: a language code (`en`, `en-US`) → that language's texts; `purposes`, what a
 * visitor may choose; `regulation` the choices are recorded under (default `gdpr`, applied by
 * the reader); `notice_text_content_id`, the wording the page shows, recorded on the events it
 * sends. A key that is neither a language code nor one of these three is not checked.
 */
export const PrivacyCenterContent = Schema.Struct(
  {
    purposes: Schema.optional(PrivacyCenterPurposes),
    regulation: Schema.optional(Regulation),
    notice_text_content_id: Schema.optional(Id)
  },
  Schema.Record({ key: LanguageCode, value: PrivacyCenterTexts })
).annotations({ identifier: "PrivacyCenterContent", parseOptions: { onExcessProperty: "preserve" } })
export type PrivacyCenterContent = typeof PrivacyCenterContent.Type

/** The regulation a privacy center's choices are recorded under when `content` names none. */
export const defaultPrivacyCenterRegulation = "gdpr"
