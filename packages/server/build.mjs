/**
 * Bundles the server into `dist/main.mjs` for `pnpm start`, `pnpm worker` and `pnpm bootstrap`.
 * Running plain JavaScript instead of TypeScript through `tsx` saves the loader thread and the
 * source-map work on every stack trace: about a fifth of the CPU per request and 80 MB of memory
 * (docs/benchmarks.md). Tests still run the sources. Native and asset packages stay outside the
 * bundle and are resolved from this package at run time.
 */
import { build } from "esbuild"
import * as path from "node:path"

const here = import.meta.dirname
await build({
  entryPoints: [path.join(here, "src", "main.ts")],
  outfile: path.join(here, "dist", "main.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["better-sqlite3", "pg-native", "swagger-ui-dist"],
  // Bundled CommonJS packages call `require`; ESM output has none of its own.
  banner: { js: "import { createRequire as __cmpRequire } from 'node:module'; const require = __cmpRequire(import.meta.url);" },
  sourcemap: "linked",
  logLevel: "warning"
})
