import { DOC, DOCX, MediaTypes, type ProofMediaType } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** What `file-type` answers, as a proof type. An animated PNG is still a PNG. */
const FROM_FILE_TYPE: Readonly<Record<string, ProofMediaType>> = {
  "application/pdf": "application/pdf",
  "image/png": "image/png",
  "image/apng": "image/png",
  "image/jpeg": "image/jpeg",
  "image/gif": "image/gif"
}

const CONTENT_TYPES = "[content_types].xml"
const MAIN_DOCUMENT = "word/document.xml"
const WORD_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
/** More than any real `[Content_Types].xml`: a bigger one is not inflated. */
const MAX_CONTENT_TYPES = 1024 * 1024

/** The value of an XML attribute in a tag's text (either quote). */
const attribute = (tag: string, name: string) => new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)')`).exec(tag)?.slice(2, 4).find((v) => v !== undefined)

/**
 * A ZIP is a Word document (ECMA-376 part 2) when its central directory lists the main document
 * part `word/document.xml` and its `[Content_Types].xml` gives that part the Word main document
 * type. Read from the package's parts, never from a search of its bytes: spreadsheets,
 * presentations, macro-enabled documents, plain ZIPs and ZIPs that only declare a Word document
 * are not DOCX. Part names are compared ignoring case, as OPC does.
 */
const isWordPackage = ({ strFromU8, unzipSync }: typeof import("fflate"), bytes: Uint8Array): boolean => {
  const names = new Set<string>()
  const parts = unzipSync(bytes, {
    filter: (file) => {
      const name = file.name.toLowerCase()
      names.add(name)
      return name === CONTENT_TYPES && file.originalSize <= MAX_CONTENT_TYPES
    }
  })
  if (!names.has(MAIN_DOCUMENT)) return false
  const types = Object.entries(parts).find(([name]) => name.toLowerCase() === CONTENT_TYPES)?.[1]
  if (types === undefined) return false
  for (const [tag] of strFromU8(types).matchAll(/<(?:\w+:)?Override\b[^>]*>/g)) {
    if (attribute(tag, "PartName")?.toLowerCase() === `/${MAIN_DOCUMENT}` && attribute(tag, "ContentType") === WORD_MAIN) return true
  }
  return false
}

/** An OLE compound file is a Word document when its root holds a `WordDocument` stream (MS-DOC 2.1). */
const isWordCompoundFile = (CFB: typeof import("cfb"), bytes: Uint8Array): boolean => {
  const container = CFB.parse(bytes)
  const root = container.FullPaths[0]?.toUpperCase()
  return root !== undefined && container.FileIndex.some((entry, i) =>
    entry.type === 2 && container.FullPaths[i].toUpperCase() === `${root}WORDDOCUMENT`
  )
}

/**
 * The readers, imported at the first proof file: most requests never carry one, and a process
 * that never reads a file does not hold their code.
 */
let readers: Promise<readonly [typeof import("file-type"), typeof import("cfb"), typeof import("fflate")]> | undefined
const loadReaders = () =>
  (readers ??= Promise.all([
    import("file-type"),
    // cfb is CommonJS: its `module.exports` is the namespace's default, in Node and in the bundle alike.
    import("cfb").then((m) => m.default),
    import("fflate")
  ]))

const detect = async (bytes: Uint8Array): Promise<ProofMediaType | undefined> => {
  const [{ fileTypeFromBuffer }, cfb, fflate] = await loadReaders()
  const found = await fileTypeFromBuffer(bytes)
  if (found === undefined) return undefined
  if (found.mime === "application/x-cfb") return isWordCompoundFile(cfb, bytes) ? DOC : undefined
  // `file-type` names a DOCX from the text of its first entry: the package's parts decide.
  if (found.mime === DOCX || found.mime === "application/zip") return isWordPackage(fflate, bytes) ? DOCX : undefined
  return Object.hasOwn(FROM_FILE_TYPE, found.mime) ? FROM_FILE_TYPE[found.mime] : undefined
}

/** Reads the type from the bytes with `file-type` (and `cfb` for DOC, `fflate` for DOCX); anything unreadable is no proof type. */
export const MediaTypesLive: Layer.Layer<MediaTypes> = Layer.succeed(MediaTypes, {
  detect: (bytes) =>
    Effect.tryPromise(() => detect(bytes)).pipe(
      Effect.orElseSucceed(() => undefined)
    )
})
