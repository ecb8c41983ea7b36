/**
 * Bundles the server into `dist/` for `pnpm start`, `pnpm worker` and `pnpm bootstrap` (the options
 * are `bundle.mjs`'s).
 * Running plain JavaScript instead of TypeScript through `tsx` saves the loader thread and the
 * source-map work on every stack trace: about a fifth of the CPU per request and 80 MB of memory
 * (docs/benchmarks.md). Tests still run the sources. `dist/meta.json` records which sources each
 * output holds.
 *
 * The bundle is written beside `dist/` and then swapped in, so a process starting meanwhile (a
 * test, a second `pnpm start`) finds a whole bundle, the old or the new one, never half of one.
 */
import { build } from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { asciiOutputs, bundleOptions } from "./bundle.mjs"

const here = import.meta.dirname
const dist = path.join(here, "dist")
const staging = `dist.new-${process.pid}`
const outdir = path.join(here, staging)
fs.rmSync(outdir, { recursive: true, force: true })
const result = await build(bundleOptions(outdir))
asciiOutputs(outdir)
// Paths in meta.json name `dist/`, where the files end up.
fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile).replaceAll(`"${staging}/`, "\"dist/"))

/** Moves `from` to `to`; false when `to` is taken (another build swapped its bundle in first). */
const move = (from, to) => {
  try {
    fs.renameSync(from, to)
  } catch (error) {
    if (error.code === "ENOENT") return true
    if (error.code === "ENOTEMPTY" || error.code === "EEXIST") return false
    throw error
  }
  return true
}
const retired = []
for (;;) {
  const old = path.join(here, `dist.old-${process.pid}-${retired.length}`)
  retired.push(old)
  move(dist, old)
  if (move(outdir, dist)) break
}
for (const old of retired) fs.rmSync(old, { recursive: true, force: true })
