import * as Effect from "effect/Effect"
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"

/**
 * The faces a proof report is drawn in: DejaVu, from the `dejavu-fonts-ttf` package (TrueType,
 * Bitstream Vera licence), which shows Latin with its extensions, Greek and Cyrillic among much
 * else. `pdfkit` embeds of each face only the glyphs a report uses.
 */
const FILES = {
  regular: "DejaVuSans.ttf",
  bold: "DejaVuSans-Bold.ttf",
  mono: "DejaVuSansMono.ttf"
} as const

export type FaceName = keyof typeof FILES

/**
 * What the report asks of a font `fontkit` parsed (`pdfkit` takes the font itself); declared here
 * so that the package's declarations name no type of `fontkit`, which ships none of its own.
 */
export interface ParsedFont {
  readonly unitsPerEm: number
  hasGlyphForCodePoint(code: number): boolean
  glyphForCodePoint(code: number): { readonly advanceWidth: number }
  layout(text: string): unknown
}

/** A face: the parsed font `pdfkit` embeds, and what laying text out needs to know of it. */
export interface Face {
  readonly font: ParsedFont
  /** Whether the face has a glyph for the code point. */
  readonly has: (code: number) => boolean
  /** The advance of a code point the face has, in ems (0 for one it lacks). */
  readonly advance: (code: number) => number
}

export type Faces = { readonly [name in FaceName]: Face }

const face = (font: ParsedFont): Face => {
  // Advances in ems, -1 for a code point the face lacks: a cmap lookup per character drawn is
  // what the Map saves.
  const known = new Map<number, number>()
  const lookup = (code: number) => {
    let advance = known.get(code)
    if (advance === undefined) {
      advance = font.hasGlyphForCodePoint(code) ? font.glyphForCodePoint(code).advanceWidth / font.unitsPerEm : -1
      known.set(code, advance)
    }
    return advance
  }
  return { font, has: (code) => lookup(code) >= 0, advance: (code) => Math.max(0, lookup(code)) }
}

/** Lets the event loop serve what waits before the next piece of work. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Text that makes a face parse the tables a report needs (character map, metrics, substitutions
 * and positioning), so the first report does not pay for them in one turn.
 */
const WARM_UP = "Proof of consent: Zażółć Příliš Ελληνικά Съгласие Straße 0123456789abcdef"

const load = async (): Promise<Faces> => {
  const { create } = await import("fontkit")
  const require = createRequire(import.meta.url)
  const faces: Partial<Record<FaceName, Face>> = {}
  for (const name of Object.keys(FILES) as Array<FaceName>) {
    // Resolved from this package at run time: an installed library and the server's bundle alike
    // find the font in the `dejavu-fonts-ttf` they depend on.
    const bytes = await fs.readFile(require.resolve(`dejavu-fonts-ttf/ttf/${FILES[name]}`))
    await nextTurn()
    const font = create(bytes)
    if (!("glyphForCodePoint" in font)) throw new Error(`${FILES[name]} is a font collection, not a font`)
    await nextTurn()
    font.layout(WARM_UP)
    faces[name] = face(font)
  }
  return faces as Faces
}

let loading: Promise<Faces> | undefined

/**
 * The report's faces, read and parsed once per process, on the first report (a server that never
 * renders one never holds them), a face a turn of the event loop. A failed load is tried again
 * on the next report.
 */
export const reportFaces: Effect.Effect<Faces> = Effect.promise(() => {
  loading ??= load().catch((error: unknown) => {
    loading = undefined
    throw error
  })
  return loading
})
