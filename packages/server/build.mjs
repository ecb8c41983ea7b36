/**
 * Bundles the server into `dist/` for `pnpm start`, `pnpm worker` and `pnpm bootstrap`: `main.mjs`
 * and one chunk per command, so `worker` and `bootstrap` never load the HTTP layer or Express.
 * Running plain JavaScript instead of TypeScript through `tsx` saves the loader thread and the
 * source-map work on every stack trace: about a fifth of the CPU per request and 80 MB of memory
 * (docs/benchmarks.md). Tests still run the sources. Native and asset packages stay outside the
 * bundle and are resolved from this package at run time. `dist/meta.json` records which sources
 * each output holds.
 */
import { build } from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"

const here = import.meta.dirname
const outdir = path.join(here, "dist")
fs.rmSync(outdir, { recursive: true, force: true })
const result = await build({
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
  external: ["better-sqlite3", "pg-native", "swagger-ui-dist"],
  // Bundled CommonJS packages call `require`; ESM output has none of its own.
  banner: { js: "import { createRequire as __cmpRequire } from 'node:module'; const require = __cmpRequire(import.meta.url);" },
  sourcemap: "linked",
  logLevel: "warning"
})
fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile))
