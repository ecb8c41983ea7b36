/**
 * The esbuild options of the server's bundle (`build.mjs`): `main.mjs` and one chunk per command,
 * so `worker` and `bootstrap` never load the HTTP layer or Express. Native and asset packages (and
 * pdfkit, which reads its fonts from its own directory) stay outside the bundle and are resolved
 * from this package at run time, so an `outdir` must be a folder of this package. Shared with
 * `pnpm bench`, which builds a second bundle beside the first to compare them. fontkit is left
 * out so that the proof report's faces are parsed by the copy `pdfkit` draws with, and the faces'
 * files (`dejavu-fonts-ttf`) are found the same way, at run time.
 */
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
