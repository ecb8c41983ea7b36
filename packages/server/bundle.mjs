/**
 * The esbuild options of the server's bundle (`build.mjs`): `main.mjs` and one chunk per command,
 * so `worker` and `bootstrap` never load the HTTP layer or Express. Native and asset packages (and
 * pdfkit, which reads its fonts from its own directory) stay outside the bundle and are resolved
 * from this package at run time, so an `outdir` must be a folder of this package. Shared with
 * `pnpm bench`, which builds a second bundle beside the first to compare them. fontkit is left
 * out so that the proof report's faces are parsed by the copy `pdfkit` draws with, and the faces'
 * files (`dejavu-fonts-ttf`) are found the same way, at run time.
 */
import * as fs from "node:fs"
import * as path from "node:path"

const here = import.meta.dirname

/** @param {string} outdir @returns {import("esbuild").BuildOptions} */
export const bundleOptions = (outdir) => ({
  absWorkingDir: here,
  entryPoints: { main: path.join(here, "src", "main.ts") },
  outdir,
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  metafile: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["better-sqlite3", "pg-native", "swagger-ui-dist", "pdfkit", "fontkit"],
  // Bundled CommonJS packages call `require`; ESM output has none of its own.
  banner: { js: "import { createRequire as __cmpRequire } from 'node:module'; const require = __cmpRequire(import.meta.url);" },
  sourcemap: "linked",
  logLevel: "warning"
})

/**
 * Rewrites every character above ASCII in the bundle's JavaScript as a `\uXXXX` escape. V8 keeps
 * each module's source for as long as the process runs, and a source with a single character
 * above Latin-1 is held two bytes a character: three of the chunks (5 MB) had some, in comments
 * and in one regular expression of markdown-it, and took 10 MB of heap instead of 5. An escape
 * means the same character in a string, a regular expression or a comment (esbuild's own
 * `charset: "ascii"` leaves comments and regular expressions as they are); only the source map's
 * columns on those few lines are off by the escapes' length.
 * @param {string} outdir
 */
export const asciiOutputs = (outdir) => {
  for (const entry of fs.readdirSync(outdir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".mjs")) continue
    const file = path.join(entry.parentPath ?? entry.path, entry.name)
    const source = fs.readFileSync(file, "utf8")
    if (!/[^\x00-\x7f]/.test(source)) continue
    fs.writeFileSync(file, source.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`))
  }
}
