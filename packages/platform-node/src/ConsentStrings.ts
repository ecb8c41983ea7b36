import { ConsentStringDecoder, type GppDecoding, type TcDecoding } from "@cmp/core"
import { GppModel, HeaderV1, Sections } from "@iabgpp/cmpapi"
import { TCString } from "@iabtechlabtcf/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as vm from "node:vm"

export interface ConsentStringOptions {
  /**
   * Wall-clock milliseconds one decode may take. The IAB libraries expand every id range of a
   * string into a list, so a crafted string of a few kilobytes keeps them busy for seconds (a
   * TC string of 4,095 ranges over every vendor id: about 10 s); an honest one takes well under
   * a millisecond, and the limit leaves room for a busy machine.
   */
  readonly timeLimitMs?: number | undefined
}

export const DEFAULT_DECODE_TIME_LIMIT_MS = 500

/** A GPP header is short: a type, a version and the section ids; more is not a header. */
const MAX_HEADER_CHARS = 1024
/** A section id's Fibonacci code longer than this (ids above 165,580,140) is not an id. */
const MAX_FIBONACCI_BITS = 40

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

class Refused extends Error {}

const bitsOf = (text: string): string => {
  let bits = ""
  for (const c of text) {
    const n = BASE64URL.indexOf(c)
    if (n < 0) throw new Refused("the header is not base64url")
    bits += n.toString(2).padStart(6, "0")
  }
  return bits
}

/**
 * The section ids a GPP header lists, read without the library and bounded: no more ids than
 * `sections` (the string's sections after the header), so a header claiming a billion sections
 * costs nothing. The library then reads the same header, and the two must agree.
 */
const headerSectionIds = (header: string, sections: number): Array<number> => {
  if (header.length > MAX_HEADER_CHARS) throw new Refused(`the header is longer than ${MAX_HEADER_CHARS} characters`)
  const bits = bitsOf(header.split(".")[0] ?? "")
  let at = 0
  const int = (width: number) => {
    if (at + width > bits.length) throw new Refused("the header ends early")
    const n = parseInt(bits.slice(at, at + width), 2)
    at += width
    return n
  }
  const fibonacci = () => {
    const end = bits.indexOf("11", at)
    if (end < 0 || end + 2 - at > MAX_FIBONACCI_BITS) throw new Refused("the header's section ids do not decode")
    let value = 0
    let a = 1
    let b = 2
    for (let i = at; i <= end; i++) {
      if (bits[i] === "1") value += a
      ;[a, b] = [b, a + b]
    }
    at = end + 2
    return value
  }
  // The type (3) is what the leading "D" said.
  int(6)
  const version = int(6)
  if (version !== HeaderV1.VERSION) throw new Refused(`the header has version ${version}, not ${HeaderV1.VERSION}`)
  const count = int(12)
  const ids: Array<number> = []
  let offset = 0
  const tooMany = () => new Refused(`the header lists more sections than the string's ${sections}`)
  for (let i = 0; i < count; i++) {
    const isRange = int(1) === 1
    const start = offset + fibonacci()
    offset = start
    const end = isRange ? offset + fibonacci() : start
    offset = end
    if (ids.length + (end - start + 1) > sections) throw tooMany()
    for (let id = start; id <= end; id++) ids.push(id)
  }
  return ids
}

const short = (message: string) => message.length > 120 ? `${message.slice(0, 117)}…` : message
const messageOf = (e: unknown) => e instanceof Error ? e.message : String(e)

const decodeGppNow = (gpp: string): GppDecoding => {
  if (!gpp.startsWith("D")) return { _tag: "Undecodable", reason: "it does not start with a GPP header" }
  const [header = "", ...sections] = gpp.split("~")
  let ids: Array<number>
  try {
    ids = headerSectionIds(header, sections.length)
    const read = new HeaderV1(header).getFieldValue("SectionIds") as Array<number>
    if (read.length !== ids.length || read.some((id, i) => id !== ids[i])) throw new Refused("the header's section ids do not decode")
  } catch (e) {
    return { _tag: "Undecodable", reason: e instanceof Refused ? e.message : `the header does not decode: ${short(messageOf(e))}` }
  }
  if (ids.length !== sections.length) {
    return { _tag: "Undecodable", reason: `the header lists ${ids.length} sections and the string has ${sections.length}` }
  }
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!
    const section = sections[i]!
    if (section.trim() === "") return { _tag: "Undecodable", reason: `section ${id} is empty` }
    const name = Sections.SECTION_ID_NAME_MAP.get(id)
    // A section the library does not know (a newer one) is kept as it is.
    if (name === undefined) continue
    try {
      const model = new GppModel()
      model.decodeSectionById(id, section)
      // Reading every field decodes every segment (the library decodes lazily).
      model.getSection(name)
    } catch (e) {
      return { _tag: "Undecodable", reason: `section ${id} (${name}) does not decode: ${short(messageOf(e))}` }
    }
  }
  return { _tag: "Decoded", sectionIds: ids }
}

const decodeTcNow = (tcfcs: string): TcDecoding => {
  try {
    const model = TCString.decode(tcfcs)
    if (model.version !== 2) return { _tag: "Undecodable", reason: `it has version ${String(model.version)}, not 2` }
    return { _tag: "Decoded" }
  } catch (e) {
    return { _tag: "Undecodable", reason: short(messageOf(e)) }
  }
}

type Undecodable = { readonly _tag: "Undecodable"; readonly reason: string }

/** One context for every decode: making one costs far more than a decode. */
const context = vm.createContext({ work: (): unknown => undefined })
const runWork = new vm.Script("work()")

/**
 * Runs `work` and stops it when it outlasts `ms`: `vm`'s timeout interrupts whatever JavaScript
 * runs, the library's own loops included, which a promise race could not. Whatever it throws
 * is a refusal too, never the caller's failure.
 */
const bounded = <A>(ms: number, work: () => A): A | Undecodable => {
  context.work = work
  try {
    return runWork.runInContext(context, { timeout: ms }) as A
  } catch (e) {
    if ((e as { code?: unknown } | null)?.code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      return { _tag: "Undecodable", reason: `it does not decode within ${ms} ms` }
    }
    return { _tag: "Undecodable", reason: short(messageOf(e)) }
  } finally {
    context.work = () => undefined
  }
}

/**
 * Decodes GPP strings with `@iabgpp/cmpapi` and TC strings with `@iabtechlabtcf/core`, each
 * decode stopped after `timeLimitMs` (then the string is refused as not decoding in time).
 */
export const makeConsentStringDecoder = (options: ConsentStringOptions = {}) => {
  const ms = options.timeLimitMs ?? DEFAULT_DECODE_TIME_LIMIT_MS
  return ConsentStringDecoder.of({
    decodeGpp: (gpp) => Effect.sync((): GppDecoding => bounded(ms, () => decodeGppNow(gpp))),
    decodeTc: (tcfcs) => Effect.sync((): TcDecoding => bounded(ms, () => decodeTcNow(tcfcs)))
  })
}

/** Strings the libraries decode, to warm them (their first decode loads and compiles far more than the next). */
const WARM_TC = "CQdWToAQdWToAACABAENCCFgAOAAAAAAAAAAAAAAAAAA.IAAA.YAAAAAAAAAAA"
const WARM_GPP = "DBACMMA~CQuZP8AQuZP8AACAAAENAAFgAMAAAAAAAAAAAAAAAAAA.IAAA.YAAAAAAAAAAA~CQAAAAAAAABA.QA"

/** The decoder, its libraries warmed once when the layer is built, so a first request does not pay for it against the limit. */
export const ConsentStringDecoderLive = (options: ConsentStringOptions = {}) =>
  Layer.sync(ConsentStringDecoder, () => {
    decodeTcNow(WARM_TC)
    decodeGppNow(WARM_GPP)
    return makeConsentStringDecoder(options)
  })
