import CFB from "cfb"
import { strToU8, zipSync, zlibSync } from "fflate"

/**
 * Small but well-formed files of every proof type, and files that look like one without being
 * one (a plain ZIP, a spreadsheet package, an OLE file without a Word document, text).
 */

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

const base64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"))

/** `data:<media type>;base64,<bytes>`, as proofs are sent. */
export const dataUri = (mediaType: string, bytes: Uint8Array): string =>
  `data:${mediaType};base64,${Buffer.from(bytes).toString("base64")}`

// ---------------------------------------------------------------- PDF

/** A one-page PDF 1.4 with a cross-reference table at the right offsets. */
export const samplePdf = (text = "I agree to the processing of my data."): Uint8Array => {
  const content = `BT /F1 12 Tf 20 100 Td (${text.replace(/[\\()]/g, "\\$&")}) Tj ET`
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
  ]
  let pdf = "%PDF-1.4\n"
  const offsets: Array<number> = []
  objects.forEach((body, i) => {
    offsets.push(pdf.length)
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`
  })
  const xref = pdf.length
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const offset of offsets) pdf += `${String(offset).padStart(10, "0")} 00000 n \n`
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return strToU8(pdf)
}

// ---------------------------------------------------------------- PNG

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

const crc32 = (bytes: Uint8Array) => {
  let c = 0xffffffff
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const PNG_SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
/** Length, type and CRC around a chunk's data. */
const CHUNK_OVERHEAD = 12

const chunk = (type: string, data: Uint8Array): Uint8Array => {
  const out = new Uint8Array(CHUNK_OVERHEAD + data.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  out.set(strToU8(type), 4)
  out.set(data, 8)
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)))
  return out
}

/** A 1×1 white RGB picture: IHDR, IDAT, IEND. */
const pngParts = () => {
  const header = new Uint8Array(13)
  const view = new DataView(header.buffer)
  view.setUint32(0, 1)
  view.setUint32(4, 1)
  header.set([8, 2, 0, 0, 0], 8) // 8 bits, truecolour, deflate, no filter, no interlace
  const scanline = new Uint8Array([0, 0xff, 0xff, 0xff]) // filter "none", then one RGB pixel
  return {
    head: concat([PNG_SIGNATURE, chunk("IHDR", header), chunk("IDAT", zlibSync(scanline))]),
    end: chunk("IEND", new Uint8Array(0))
  }
}

export const samplePng = (): Uint8Array => {
  const { end, head } = pngParts()
  return concat([head, end])
}

/**
 * A valid PNG of `bytes` bytes (or the smallest one, when `bytes` is smaller): the picture of
 * `samplePng` and a `tEXt` comment filling the rest, for size limits.
 */
export const largePng = (bytes: number): Uint8Array => {
  const { end, head } = pngParts()
  const keyword = strToU8("Comment\0")
  const fill = bytes - head.length - end.length - CHUNK_OVERHEAD - keyword.length
  if (fill < 0) return concat([head, end])
  const text = new Uint8Array(keyword.length + fill).fill(0x20)
  text.set(keyword)
  return concat([head, chunk("tEXt", text), end])
}

// ---------------------------------------------------------------- JPEG, GIF

/** A 1×1 grey baseline JFIF (libjpeg's cjpeg), which `djpeg` decodes. */
const JPEG = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/wAALCAABAAEBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/APQK/9k="

/** A 1×1 transparent GIF89a. */
const GIF = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="

export const sampleJpeg = (): Uint8Array => base64(JPEG)

export const sampleGif = (): Uint8Array => base64(GIF)

// ---------------------------------------------------------------- OOXML packages (ZIP)

const RELS_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
const OFFICE_DOCUMENT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
const XML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`

/** A fixed modification time: the same sample is the same bytes whenever it is made. */
const FIXED = { mtime: new Date("2026-01-01T00:00:00Z") }

const WORD_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"

/** The `[Content_Types].xml` of a package whose main part is `partName` of content type `mainType`. */
const contentTypes = (partName: string, mainType: string) =>
  strToU8(
    `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
      `<Default Extension="xml" ContentType="application/xml"/>` +
      `<Override PartName="/${partName}" ContentType="${mainType}"/></Types>`
  )

/** An OPC package whose main part is `partName` of content type `mainType`. */
const ooxml = (partName: string, mainType: string, main: string): Uint8Array =>
  zipSync({
    "[Content_Types].xml": contentTypes(partName, mainType),
    "_rels/.rels": strToU8(
      `${XML}<Relationships xmlns="${RELS_NS}"><Relationship Id="rId1" Type="${OFFICE_DOCUMENT}" Target="${partName}"/></Relationships>`
    ),
    [partName]: strToU8(`${XML}${main}`)
  }, FIXED)

/** A one-paragraph Word document. */
export const sampleDocx = (text = "I agree to the processing of my data."): Uint8Array =>
  ooxml(
    "word/document.xml",
    WORD_MAIN,
    `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:body></w:document>`
  )

/** A spreadsheet package: a ZIP with `[Content_Types].xml` too, but no Word document. */
export const sampleXlsx = (): Uint8Array =>
  ooxml(
    "xl/workbook.xml",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
    `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets/></workbook>`
  )

/**
 * A ZIP that only declares a Word document: its `[Content_Types].xml` gives `/word/document.xml`
 * the Word type, and that name is in its bytes (a stored text file holds it), but no part has it.
 */
export const sampleDeclaredDocx = (): Uint8Array =>
  zipSync({
    "[Content_Types].xml": contentTypes("word/document.xml", WORD_MAIN),
    "readme.txt": strToU8("word/document.xml")
  }, { ...FIXED, level: 0 })

/** A ZIP holding `word/document.xml` whose `[Content_Types].xml` names no Word document. */
export const sampleUndeclaredDocx = (): Uint8Array =>
  zipSync({
    "[Content_Types].xml": contentTypes("word/document.xml", "application/xml"),
    "word/document.xml": strToU8(`${XML}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>`)
  }, FIXED)

/** A ZIP of one text file. */
export const samplePlainZip = (): Uint8Array => zipSync({ "hello.txt": strToU8("hello") }, FIXED)

// ---------------------------------------------------------------- OLE compound files

/** The start of a Word 97 File Information Block: its `wIdent` magic, then `nFib` 193 (MS-DOC 2.5.2). */
const wordFib = () => {
  const fib = new Uint8Array(1472)
  fib.set([0xec, 0xa5, 0xc1, 0x00])
  return fib
}

const compoundFile = (streams: Readonly<Record<string, Uint8Array>>): Uint8Array => {
  const container = CFB.utils.cfb_new()
  for (const [name, bytes] of Object.entries(streams)) CFB.utils.cfb_add(container, `/${name}`, bytes)
  return new Uint8Array(CFB.write(container, { type: "buffer" }) as Uint8Array)
}

/** A Word 97-2003 document: an OLE compound file with `WordDocument` and `1Table` streams. */
export const sampleDoc = (): Uint8Array => compoundFile({ WordDocument: wordFib(), "1Table": new Uint8Array(512) })

/** An OLE compound file like an Excel 97 workbook: a `Workbook` stream, no `WordDocument`. */
export const sampleOleWithoutWord = (): Uint8Array => compoundFile({ Workbook: new Uint8Array(4096).fill(1) })

// ---------------------------------------------------------------- other

export const sampleText = (): Uint8Array => strToU8("This is not a proof file, just text.\n")
