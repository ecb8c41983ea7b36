/**
 * `pnpm pack:packages [directory]`: the tarball of every library package, as the registry will
 * serve it once the packages are published, for installing the platform outside this repository
 * now (docs/embedding.md). `pnpm pack:check` runs this same command and checks what it wrote.
 *
 * Each package's `prepack` compiles it; `pnpm pack` applies its `publishConfig` and turns its
 * `workspace:` and `catalog:` ranges into versions. The directory (default `packed/` at the
 * repository root, relative to where pnpm was run) is created, and the tarballs an earlier run
 * left there for these packages are removed first, so it holds one version of each.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { libraryPackages, root, tarballName, tarballPrefix } from "./packing.mjs"

const fail = (message) => {
  console.error(`pack:packages: FAILED: ${message}`)
  process.exit(1)
}

const destination = path.resolve(process.env.INIT_CWD ?? process.cwd(), process.argv[2] ?? path.join(root, "packed"))
const libraries = libraryPackages()
if (libraries.length === 0) fail("no library package found")
fs.mkdirSync(destination, { recursive: true })

/** A path as short as it is clear: relative to the working directory when it is under it. */
const shown = (file) => (path.relative(process.cwd(), file).startsWith("..") ? file : path.relative(process.cwd(), file))

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
const earlier = new RegExp(`^(${libraries.map((l) => escape(tarballPrefix(l.manifest.name))).join("|")})-\\d+\\.\\d+\\.\\d+.*\\.tgz$`)
for (const file of fs.readdirSync(destination).filter((f) => earlier.test(f))) fs.rmSync(path.join(destination, file))

for (const { dir, manifest } of libraries) {
  // The compiler's output (from prepack) is shown only when packing fails.
  const packing = spawnSync("pnpm", ["pack", "--pack-destination", destination], { cwd: dir, encoding: "utf8" })
  if (packing.status !== 0) {
    process.stdout.write(packing.stdout)
    process.stderr.write(packing.stderr)
    fail(`${manifest.name}: pnpm pack exited with ${packing.status ?? packing.signal}`)
  }
  const tarball = path.join(destination, tarballName(manifest))
  if (!fs.existsSync(tarball)) fail(`${manifest.name}: pnpm pack wrote no ${path.basename(tarball)}`)
  console.log(`pack:packages: ${manifest.name}@${manifest.version} → ${shown(tarball)}`)
}

console.log(`pack:packages: ${libraries.length} tarballs in ${destination}; install them in another project with
  npm install ${path.join(destination, "*.tgz")} express`)
