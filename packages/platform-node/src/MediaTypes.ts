import { DOC, DOCX, MediaTypes, type ProofMediaType } from "@cmp/core"
import CFB from "cfb"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fileTypeFromBuffer } from "file-type"

/**
 * What `file-type` answers, as a proof type. An animated PNG is still a PNG. A DOCX is only
 * reported when the package's `[Content_Types].xml` names a Word document as its main part:
 * spreadsheets, presentations, macro-enabled documents and plain ZIPs are not.
 */
const FROM_FILE_TYPE: Readonly<Record<string, ProofMediaType>> = {
  "application/pdf": "application/pdf",
  "image/png": "image/png",
  "image/apng": "image/png",
  "image/jpeg": "image/jpeg",
  "image/gif": "image/gif",
  [DOCX]: DOCX
}

/** An OLE compound file is a Word document when its root holds a `WordDocument` stream (MS-DOC 2.1). */
const isWordCompoundFile = (bytes: Uint8Array): boolean => {
  const container = CFB.parse(bytes)
  const root = container.FullPaths[0]?.toUpperCase()
  return root !== undefined && container.FileIndex.some((entry, i) =>
    entry.type === 2 && container.FullPaths[i].toUpperCase() === `${root}WORDDOCUMENT`
  )
}

const detect = async (bytes: Uint8Array): Promise<ProofMediaType | undefined> => {
  const found = await fileTypeFromBuffer(bytes)
  if (found === undefined) return undefined
  if (found.mime === "application/x-cfb") return isWordCompoundFile(bytes) ? DOC : undefined
  return Object.hasOwn(FROM_FILE_TYPE, found.mime) ? FROM_FILE_TYPE[found.mime] : undefined
}

/** Reads the type from the bytes with `file-type` (and `cfb` for DOC); anything unreadable is no proof type. */
export const MediaTypesLive: Layer.Layer<MediaTypes> = Layer.succeed(MediaTypes, {
  detect: (bytes) =>
    Effect.tryPromise(() => detect(bytes)).pipe(
      Effect.orElseSucceed(() => undefined)
    )
})
