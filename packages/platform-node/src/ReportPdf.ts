import { type ProofReportDocument, ReportPdf } from "@cmp/core"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type PDFDocumentClass from "pdfkit"
import { type Face, type FaceName, type Faces, reportFaces } from "./ReportFonts.js"

type Report = Parameters<Context.Tag.Service<typeof ReportPdf>["render"]>[0]
type Regulation = ProofReportDocument["regulations"][number]
type ReportEvent = Regulation["events"][number]
type LogEntry = ProofReportDocument["user_log"][number]
interface Purpose {
  readonly id: string
  readonly enabled: boolean
  readonly enabled_li?: boolean | undefined
}
interface Vendors {
  readonly enabled?: ReadonlyArray<string> | undefined
  readonly disabled?: ReadonlyArray<string> | undefined
  readonly enabled_li?: ReadonlyArray<string> | undefined
  readonly disabled_li?: ReadonlyArray<string> | undefined
}
interface Choices {
  readonly purposes?: ReadonlyArray<Purpose> | undefined
  readonly vendors?: Vendors | undefined
  readonly tcfcs?: string | undefined
}

// ---------------------------------------------------------------- text the faces can show

/** Characters that change how others are shown but show nothing themselves: left out where a face lacks them. */
const invisible = (code: number) =>
  (code >= 0x200b && code <= 0x200f) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2060 && code <= 0x206f) ||
  (code >= 0xfe00 && code <= 0xfe0f) || code === 0xfeff || (code >= 0xe0000 && code <= 0xe0fff)

/** Spaces a line may not break at (no-break, figure and narrow no-break spaces). */
const gluing = (code: number) => code === 0xa0 || code === 0x2007 || code === 0x202f

/** At most this many spaces in a row are drawn. */
const SPACES = 8

/**
 * The text as a face can draw it: a character it lacks becomes its unaccented letter when the
 * face has that, `?` otherwise (the report's JSON, not its PDF, is what is hashed). A space a line
 * may not break at is drawn as a plain space, and a run of spaces is cut to `SPACES`: `pdfkit`
 * cuts a "word" wider than its line by measuring what is left of it after every line, so words
 * joined by no-break spaces or a long run of spaces (a word with its trailing spaces) cost time
 * quadratic in their length.
 */
const pdfText = (text: string, face: Face, keepLineBreaks = false): string => {
  let out = ""
  for (const char of text.normalize("NFC")) {
    const code = char.codePointAt(0)!
    if (char === "\n" && keepLineBreaks) out += "\n"
    else if (char === "\r" || code === 0xfeff) continue
    else if (code < 0x20 || code === 0x7f || (code >= 0x80 && code < 0xa0) || gluing(code)) out += " "
    else if (face.has(code)) out += char
    else if (invisible(code)) continue
    else {
      const plain = char.normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      out += plain.length > 0 && [...plain].every((c) => face.has(c.codePointAt(0)!)) ? plain : "?"
    }
  }
  return out.replace(new RegExp(`[^\\S\\n]{${SPACES + 1},}`, "g"), " ".repeat(SPACES))
}

// ---------------------------------------------------------------- layout

const MARGIN = 50
const BODY = 10
/** Ids and digests in fields: a 64-digit hash and its label still fit on one line. */
const MONO = 9.5
/** Log entries and TC strings: `shard/seq hash  (created_at)` fits on one line. */
const SMALL_MONO = 7.5
/** An event's metadata is shown up to this many characters (the report's JSON holds it whole). */
const SHOWN_METADATA = 2000

/**
 * Of a line, the share a run of non-space characters may fill when cut: kerning may make a run
 * a little wider than the sum of its glyphs' advances.
 */
const SLACK = 0.95

/**
 * The text with every run of non-space characters wider than `ems` cut into lines that fit it:
 * `pdfkit` breaks a word wider than its line by measuring ever shorter prefixes of it, which is
 * quadratic in the word's length; a run that fits a line is only ever moved whole. Linear: a
 * run's width is the sum of its characters' advances in the face.
 */
const breakRuns = (text: string, face: Face, ems: number): string => {
  const room = ems * SLACK
  return text.replace(/\S+/g, (word) => {
    const lines: Array<string> = []
    let start = 0
    let at = 0
    let width = 0
    for (const char of word) {
      const advance = face.advance(char.codePointAt(0)!)
      if (width + advance > room && at > start) {
        lines.push(word.slice(start, at))
        start = at
        width = 0
      }
      width += advance
      at += char.length
    }
    if (lines.length === 0) return word
    lines.push(word.slice(start))
    return lines.join("\n")
  })
}

/** Lets the event loop serve what waits (I/O, timers) before drawing on: a microtask would not. */
const nextTurn = Effect.async<void>((resume) => {
  const pending = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(pending))
})

/** About this many characters are drawn in one turn of the event loop (some 40 lines). */
const PIECE = 2000

/** The text cut at line breaks into pieces of about `PIECE` characters (a longer line is a piece of its own). */
const pieces = (text: string): Array<string> => {
  const out: Array<string> = []
  let lines: Array<string> = []
  let size = 0
  for (const line of text.split("\n")) {
    if (lines.length > 0 && size + line.length > PIECE) {
      out.push(lines.join("\n"))
      lines = []
      size = 0
    }
    lines.push(line)
    size += line.length + 1
  }
  if (lines.length > 0) out.push(lines.join("\n"))
  return out
}

/** A value cut to `max` characters, saying how much was left out. */
const cut = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max)} [... ${text.length - max} more characters, kept whole in the report's JSON]`

class Writer {
  constructor(readonly doc: PDFKit.PDFDocument, readonly faces: Faces) {
    // `pdfkit` takes a parsed font as well as its bytes (its types name only bytes): the faces
    // are parsed once per process, and each document embeds the glyphs it uses.
    for (const name of ["regular", "bold", "mono"] as const) doc.registerFont(name, faces[name].font as unknown as Uint8Array)
  }

  private get width() {
    return this.doc.page.width - 2 * MARGIN
  }

  /** Sets the face and size, and answers the text as the face shows it, its long runs cut to lines that fit `width`. */
  private fit(text: string, face: FaceName, size: number, width: number, keepLineBreaks = false) {
    this.doc.font(face).fontSize(size)
    return breakRuns(pdfText(text, this.faces[face], keepLineBreaks), this.faces[face], width / size)
  }

  title(text: string) {
    this.doc.text(this.fit(text, "bold", 18, this.width), { width: this.width })
    this.doc.moveDown(0.3)
  }

  /** Starts a new page unless `lines` more lines fit: a label is never left alone at the foot of a page. */
  keep(lines: number) {
    if (this.doc.y + lines * BODY * 1.3 > this.doc.page.height - this.doc.page.margins.bottom) this.doc.addPage()
  }

  heading(text: string, level: 1 | 2 | 3) {
    const size = level === 1 ? 14 : level === 2 ? 12 : 10.5
    this.keep(level === 3 ? 4 : 5)
    this.doc.moveDown(level === 3 ? 0.4 : 0.8)
    this.doc.text(this.fit(text, "bold", size, this.width), MARGIN, undefined, { width: this.width })
    this.doc.moveDown(0.2)
  }

  note(text: string) {
    this.doc.moveDown(0.3)
    this.doc.fillColor("#444444").text(this.fit(text, "regular", 8.5, this.width), MARGIN, undefined, { width: this.width })
    this.doc.fillColor("black")
  }

  /** `label: value`, the value in the monospaced face when it is an id or a digest. */
  field(label: string, value: string, mono = false, indent = 0) {
    this.doc.text(`${this.fit(label, "bold", BODY, this.width - indent)}: `, MARGIN + indent, undefined, {
      width: this.width - indent,
      continued: true
    })
    this.doc.text(this.fit(value, mono ? "mono" : "regular", mono ? MONO : BODY, this.width - indent))
  }

  line(text: string, indent = 0, mono = false) {
    this.doc.text(this.fit(text, mono ? "mono" : "regular", mono ? SMALL_MONO : BODY, this.width - indent), MARGIN + indent, undefined, {
      width: this.width - indent
    })
  }

  /** A long unbroken string (a TC string), in lines of the monospaced face, a piece a turn. */
  block(text: string, indent = 0) {
    return Effect.forEach(pieces(this.fit(text, "mono", SMALL_MONO, this.width - indent)), (piece) =>
      Effect.zipRight(
        nextTurn,
        Effect.sync(() => this.doc.font("mono").fontSize(SMALL_MONO).text(piece, MARGIN + indent, undefined, { width: this.width - indent }))
      ), { discard: true })
  }

  /** Long prose (a notice's wording): wrapped, paginated, its paragraphs kept, a piece a turn. */
  prose(text: string, indent = 0) {
    const paragraphs = this.fit(text, "regular", BODY, this.width - indent, true).split(/\n\s*\n+/).map((p) => p.trim()).filter((p) => p.length > 0)
    return Effect.forEach(pieces(paragraphs.join("\n")), (piece) =>
      Effect.zipRight(
        nextTurn,
        Effect.sync(() =>
          this.doc.font("regular").fontSize(BODY).text(piece, MARGIN + indent, undefined, { width: this.width - indent, paragraphGap: 4 })
        )
      ), { discard: true })
  }

  gap(lines = 0.4) {
    this.doc.moveDown(lines)
  }

  /** Page numbers in the bottom margin, written once every page exists. */
  footers(text: string) {
    const { start, count } = this.doc.bufferedPageRange()
    for (let i = start; i < start + count; i++) {
      this.doc.switchToPage(i)
      const bottom = this.doc.page.margins.bottom
      this.doc.page.margins.bottom = 0
      this.doc.fillColor("#666666").text(
        this.fit(`${text} - page ${i + 1} of ${count}`, "regular", 7.5, this.width),
        MARGIN,
        this.doc.page.height - MARGIN + 18,
        { width: this.width, align: "center", lineBreak: false }
      )
      this.doc.page.margins.bottom = bottom
    }
    this.doc.fillColor("black")
  }
}

const onOff = (enabled: boolean) => (enabled ? "enabled" : "disabled")
const list = (ids: ReadonlyArray<string> | undefined) => (ids && ids.length > 0 ? ids.join(", ") : "none")
const logLine = (e: LogEntry) => `${e.shard}/${e.seq} ${e.hash}  (${e.created_at})`

const choices = (w: Writer, consents: Choices, indent: number) =>
  Effect.gen(function*() {
    const purposes = consents.purposes ?? []
    if (purposes.length === 0) w.line("Purposes: none", indent)
    for (const p of purposes) {
      const li = p.enabled_li === undefined ? "" : `; legitimate interest ${onOff(p.enabled_li)}`
      w.line(`Purpose ${p.id}: ${onOff(p.enabled)}${li}`, indent)
    }
    const vendors = consents.vendors
    if (vendors !== undefined) {
      w.line(`Vendors enabled: ${list(vendors.enabled)}`, indent)
      w.line(`Vendors disabled: ${list(vendors.disabled)}`, indent)
      if (vendors.enabled_li !== undefined || vendors.disabled_li !== undefined) {
        w.line(`Vendors enabled (legitimate interest): ${list(vendors.enabled_li)}`, indent)
        w.line(`Vendors disabled (legitimate interest): ${list(vendors.disabled_li)}`, indent)
      }
    }
    if (consents.tcfcs !== undefined) {
      w.line("TCF consent string:", indent)
      yield* w.block(consents.tcfcs, indent + 10)
    }
  })

const event = (w: Writer, e: ReportEvent) =>
  Effect.gen(function*() {
    w.heading(`Event ${e.id}`, 3)
    w.field("Created at", e.created_at, false, 10)
    if (e.updated_at !== e.created_at) w.field("Updated at", e.updated_at, false, 10)
    w.field("Status", e.status, false, 10)
    if (e.delegate) {
      w.field("Recorded by delegate", e.delegate.name ? `${e.delegate.id} (${e.delegate.name})` : e.delegate.id, false, 10)
    }
    w.keep(2)
    w.line("Choices:", 10)
    yield* choices(w, e.consents, 20)
    if (e.metadata) w.field("Metadata", cut(JSON.stringify(e.metadata), SHOWN_METADATA), false, 10)
    if (e.notice) {
      w.gap(0.3)
      w.field(
        "Notice wording",
        `notice ${e.notice.id}, text ${e.notice.text_id}, version ${e.notice.content_version}`,
        false,
        10
      )
      w.gap(0.2)
      yield* w.prose(e.notice.content, 20)
      w.gap(0.2)
    }
    if (e.proofs.length > 0) {
      w.keep(3)
      w.line("Proofs:", 10)
      for (const p of e.proofs) {
        if (p.erased || p.sha256 === null) w.line(`${p.id}: erased`, 20)
        else {
          w.line(`${p.id}: ${p.media_type ?? "unknown type"}, ${p.size ?? "?"} bytes`, 20)
          w.field("sha256", p.sha256, true, 30)
        }
      }
    }
    w.keep(2)
    w.line(e.log.length > 0 ? "Consent log entries (shard/seq hash):" : "Consent log entries: none", 10)
    for (const entry of e.log) w.line(logLine(entry), 20, true)
  })

/** Each event drawn in a turn of its own: a user with many events does not hold the event loop. */
const regulation = (w: Writer, r: Regulation) =>
  Effect.gen(function*() {
    w.heading(`Regulation ${r.regulation}`, 1)
    w.heading("Effective status", 2)
    yield* choices(w, r.consents, 0)
    w.heading(r.events.length > 0 ? `Consent events (${r.events.length}, oldest first)` : "Consent events: none", 2)
    for (const e of r.events) {
      yield* nextTurn
      yield* event(w, e)
    }
  })

const draw = (w: Writer, { created_at, id, report, sha256 }: Report) =>
  Effect.gen(function*() {
    w.title("Proof of consent")
    w.field("Report", id, true)
    w.field("Created at", created_at)
    w.field("Generated at", report.generated_at)
    w.field("Report sha256", sha256, true)
    w.note(
      "The report sha256 is the SHA-256 of the RFC 8785 canonical JSON of the report's content, kept by the service; " +
        "this PDF renders that content. Characters its fonts cannot show are replaced by '?'."
    )
    w.heading("Organization", 2)
    w.field("Name", report.organization.name)
    w.field("Id", report.organization.id, true)
    w.heading("User", 2)
    w.field("Id", report.user.id, true)
    w.field("Organization user id", report.user.organization_user_id ?? "none", report.user.organization_user_id !== null)
    w.field("Created at", report.user.created_at)
    if (report.regulations.length === 0) w.heading("No consent recorded for this user", 2)
    for (const r of report.regulations) yield* regulation(w, r)
    yield* nextTurn
    w.heading("Consent log", 1)
    w.field("Head", report.log_head, true)
    w.line(report.user_log.length > 0 ? "Entries covering the user (shard/seq hash):" : "Entries covering the user: none")
    for (const entry of report.user_log) w.line(logLine(entry), 10, true)
    w.footers(`Proof of consent ${id}`)
  })

/**
 * `pdfkit` and the faces are loaded on the first report, not at start: their tables are megabytes
 * of heap that every garbage collection of a server that never renders a report would walk.
 */
let loaded: Promise<typeof PDFDocumentClass> | undefined
const pdfkit = Effect.promise(() => (loaded ??= import("pdfkit").then((m) => m.default)))

const render = (report: Report) =>
  Effect.flatMap(Effect.zip(pdfkit, reportFaces), ([PDFDocument, faces]) => renderWith(PDFDocument, faces, report))

const renderWith = (PDFDocument: typeof PDFDocumentClass, faces: Faces, report: Report) =>
  Effect.suspend(() => {
    const created = new Date(report.created_at)
    const doc = new PDFDocument({
      size: "A4",
      margin: MARGIN,
      bufferPages: true,
      // The document's first face: without one, `pdfkit` would set up Helvetica, which no text uses.
      font: faces.regular.font as unknown as string,
      info: {
        Title: `Proof of consent ${report.id}`,
        Subject: `sha256 ${report.sha256}`,
        Producer: "Consent platform",
        Creator: "Consent platform",
        CreationDate: Number.isNaN(created.getTime()) ? new Date(0) : created
      }
    })
    const chunks: Array<Buffer> = []
    doc.on("data", (chunk: Buffer) => chunks.push(chunk))
    const ended = new Promise<Uint8Array>((resolve, reject) => {
      doc.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))))
      doc.on("error", reject)
    })
    return draw(new Writer(doc, faces), report).pipe(
      Effect.zipRight(Effect.sync(() => doc.end())),
      Effect.zipRight(Effect.promise(() => ended))
    )
  })

/** Renders a proof report as an A4 PDF with `pdfkit`, in DejaVu faces (`ReportFonts.ts`). */
export const ReportPdfLive: Layer.Layer<ReportPdf> = Layer.succeed(ReportPdf, { render })
