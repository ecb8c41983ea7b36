import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { type EventConsents } from "../Domain/Consent.js"
import { InvalidInput } from "../Domain/Errors.js"

/** What a decoder says of a string: it decodes (a GPP string with the ids of its sections), or why not. */
export type GppDecoding =
  | { readonly _tag: "Decoded"; readonly sectionIds: ReadonlyArray<number> }
  | { readonly _tag: "Undecodable"; readonly reason: string }

export type TcDecoding = { readonly _tag: "Decoded" } | { readonly _tag: "Undecodable"; readonly reason: string }

/**
 * Decodes the consent strings an event carries, with the IAB's own libraries (outside core).
 * A refusal is a value, never a failure: what to answer is core's rule. An implementation must
 * answer for any input, hostile ones included, in bounded time.
 */
export class ConsentStringDecoder extends Context.Tag("@cmp/core/ConsentStringDecoder")<
  ConsentStringDecoder,
  {
    /** A GPP string: its header and every section the decoder knows (others are kept, unread). */
    readonly decodeGpp: (gpp: string) => Effect.Effect<GppDecoding>
    /** An IAB TCF v2 TC string. */
    readonly decodeTc: (tcfcs: string) => Effect.Effect<TcDecoding>
  }
>() {}

const refuse = (field: string, why: string) =>
  Effect.fail(new InvalidInput({ message: `Invalid ${field}: ${why}`, errors: { [field]: why } }))

/**
 * The consent strings of a write, checked: a `gpp` must decode, and its `gpp_sid` list only
 * sections the string has (derived from the string when not given); a non-empty `tcfcs` must
 * decode as a TC string. Answers the consents to store. Stored strings are not checked again:
 * on an update (`before`, the event's stored consents), a string the event already has passes
 * as it is, so a row written before these checks stays writable.
 */
export const checkConsentStrings = (consents: EventConsents, before?: EventConsents): Effect.Effect<EventConsents, InvalidInput, ConsentStringDecoder> =>
  // Most events carry neither string: they pay nothing for the check.
  (consents.tcfcs === undefined || consents.tcfcs === "") && consents.gpp === undefined && consents.gpp_sid === undefined
    ? Effect.succeed(consents)
    : checkStrings(consents, before)

const checkStrings = (consents: EventConsents, before?: EventConsents) =>
  Effect.gen(function*() {
    const decoder = yield* ConsentStringDecoder
    const tcfcs = consents.tcfcs
    if (tcfcs !== undefined && tcfcs !== "" && tcfcs !== before?.tcfcs) {
      const tc = yield* decoder.decodeTc(tcfcs)
      if (tc._tag === "Undecodable") return yield* refuse("consents.tcfcs", `is not an IAB TCF v2 TC string: ${tc.reason}`)
    }
    if (consents.gpp === undefined) {
      if (consents.gpp_sid !== undefined) return yield* refuse("consents.gpp_sid", "needs the GPP string (gpp) it describes")
      return consents
    }
    if (before !== undefined && consents.gpp === before.gpp) {
      if (consents.gpp_sid === undefined) {
        return before.gpp_sid === undefined ? consents : { ...consents, gpp_sid: before.gpp_sid }
      }
      if (JSON.stringify(consents.gpp_sid) === JSON.stringify(before.gpp_sid)) return consents
    }
    const gpp = yield* decoder.decodeGpp(consents.gpp)
    if (gpp._tag === "Undecodable") return yield* refuse("consents.gpp", `is not a GPP string: ${gpp.reason}`)
    if (consents.gpp_sid === undefined) return { ...consents, gpp_sid: [...gpp.sectionIds] }
    const present = new Set(gpp.sectionIds)
    const missing = consents.gpp_sid.find((id) => !present.has(id))
    if (missing !== undefined) {
      return yield* refuse(
        "consents.gpp_sid",
        `section ${missing} is not in the GPP string (its sections: ${gpp.sectionIds.join(", ") || "none"})`
      )
    }
    return consents
  })
