/**
 * What a Node service installing the published packages gets (`pnpm pack:check`, run by CI).
 *
 *   node scripts/pack-check.mjs [host.mjs [more npm packages the host imports, e.g. name@1.2.3]]
 *
 * 1. Packs every library package (each `packages/*` that is not private) with the command the
 *    docs give for it, `pnpm pack:packages` (scripts/pack-packages.mjs), into a temporary
 *    directory outside the workspace; each package's `prepack` compiles it.
 * 2. Checks each tarball: no tests, fixtures, keys or TypeScript sources (`.d.ts` is fine), a
 *    LICENSE, the files that `exports`, `types` and `bin` name, no `workspace:` or `catalog:`
 *    range left in the packed package.json, no compiled file whose source is gone, and every
 *    package that its `.d.ts` files import declared as a dependency (with its `@types/…` package
 *    when it has no declarations of its own).
 * 3. Makes a plain npm project under the system's temporary directory, `npm install`s every
 *    tarball and express in one command, as docs/embedding.md says to (what the `@cmp` packages
 *    need of each other comes from the tarballs given with them, the rest from the registry;
 *    better-sqlite3 compiles from source when no prebuilt binary can be fetched), checks that each declared
 *    command is installed (and that `cmp-server` starts), copies the host script into it
 *    and runs it with plain `node`: no TypeScript, no loader. The host exits 0 when all is well.
 *    By default the host is `scripts/pack-smoke.mjs`; any other `.mjs` file can be given.
 * 4. Makes a second plain npm project with `@cmp/http-fetch` and `@cmp/store-postgres` alone (the
 *    tarballs they need and `pg`): fails if a native module was built (`better-sqlite3` installed,
 *    or a `.node` file under a `build/` directory, node-gyp's output), then runs `scripts/pack-fetch-postgres.mjs` there, the fetch
 *    handler on PostgreSQL (`DATABASE_URL`, default postgres://postgres@127.0.0.1:5432/postgres,
 *    in a database of its own, dropped after) given web `Request`s and answering `Response`s.
 *
 * npm runs without the `npm_config_*` variables of the pnpm script around it (scripts/packing.mjs):
 * it reads its settings from its own `.npmrc` files.
 * Exits non-zero on the first failure. PACK_CHECK_KEEP=1 keeps the temporary directory.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { builtinModules } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { libraryPackages, npmEnvironment, root, tarballName } from "./packing.mjs"

const host = path.resolve(process.argv[2] ?? path.join(root, "scripts", "pack-smoke.mjs"))
const hostDependencies = process.argv.slice(3)
if (!fs.existsSync(host)) fail(`no host script at ${host}`)

const work = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), "cmp-pack-check-"))
if (work.startsWith(root + path.sep)) fail(`the temporary directory ${work} is inside the workspace`)
const tarballs = path.join(work, "tarballs")
const unpacked = path.join(work, "unpacked")
const app = path.join(work, "app")
for (const dir of [tarballs, unpacked, app]) fs.mkdirSync(dir)
process.on("exit", (code) => {
  if (process.env.PACK_CHECK_KEEP === "1" || code !== 0) console.log(`pack-check: files kept in ${work}`)
  else fs.rmSync(work, { recursive: true, force: true })
})

function fail(message) {
  console.error(`pack-check: FAILED: ${message}`)
  process.exit(1)
}

const run = (command, args, options = {}) => {
  const result = spawnSync(command, args, { stdio: "inherit", ...options })
  if (result.status !== 0) fail(`${command} ${args.join(" ")} (in ${options.cwd ?? process.cwd()}) exited with ${result.status ?? result.signal}`)
}

const libraries = libraryPackages()
if (libraries.length === 0) fail("no library package found")
console.log(`pack-check: ${libraries.length} packages: ${libraries.map((l) => l.manifest.name).join(", ")}`)

// The documented command, into this run's own directory (an argument replaces `packed/`).
console.log(`\npack-check: pnpm pack:packages ${tarballs}`)
run("pnpm", ["--silent", "pack:packages", tarballs], { cwd: root })
const made = fs.readdirSync(tarballs).sort()
const expectedTarballs = libraries.map((l) => tarballName(l.manifest)).sort()
if (made.join() !== expectedTarballs.join()) fail(`pnpm pack:packages wrote ${made.join(", ") || "nothing"}; expected ${expectedTarballs.join(", ")}`)

/** A path inside a tarball that must not be published. */
const forbidden = (file) =>
  (/(^|\/)(test|tests|test-faults|__tests__|fixtures?)\//.test(file) && "a test or fixture") ||
  (/\.(test|spec)\.[cm]?[jt]sx?$/.test(file) && "a test") ||
  (/\.(pem|key|crt|p12|pfx)$/.test(file) && "a key or certificate") ||
  (/\.[cm]?tsx?$/.test(file) && !/\.d\.[cm]?ts$/.test(file) && "a TypeScript source") ||
  (/\.tsbuildinfo$/.test(file) && "compiler state") ||
  (/(^|\/)(node_modules|src)\//.test(file) && "sources or dependencies") ||
  false

/** Whether the dependency `dep` of the package in `dir` has declarations of its own (else @types/…). */
const shipsTypes = (dir, dep) => {
  const manifest = path.join(dir, "node_modules", dep, "package.json")
  if (!fs.existsSync(manifest)) return true
  const { types, typings, exports } = JSON.parse(fs.readFileSync(manifest, "utf8"))
  // A .ts export: a workspace package, whose published manifest names its declarations.
  if (types || typings || /"types"|\.[cm]?ts"/.test(JSON.stringify(exports ?? {}))) return true
  return fs.existsSync(path.join(path.dirname(manifest), "index.d.ts"))
}

const license = fs.readFileSync(path.join(root, "LICENSE"), "utf8")
const builtins = new Set(builtinModules)
const packed = []
const packedByName = new Map()

for (const { dir, manifest } of libraries) {
  const name = manifest.name
  console.log(`\npack-check: ${name}`)
  const tarball = path.join(tarballs, tarballName(manifest))
  packed.push(tarball)
  packedByName.set(name, tarball)

  const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line !== "" && !line.endsWith("/"))
    .map((line) => line.replace(/^package\//, ""))
  console.log(files.map((f) => `  ${f}`).join("\n"))
  const bad = files.map((f) => [f, forbidden(f)]).filter(([, why]) => why)
  if (bad.length > 0) fail(`${name} would publish ${bad.map(([f, why]) => `${f} (${why})`).join(", ")}`)

  const into = path.join(unpacked, name.replace("/", "+"))
  fs.mkdirSync(into)
  execFileSync("tar", ["-xzf", tarball, "-C", into, "--strip-components=1"])
  const pkg = JSON.parse(fs.readFileSync(path.join(into, "package.json"), "utf8"))
  const problems = []
  if (pkg.private) problems.push("is private")
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(pkg.version ?? "")) problems.push(`version ${pkg.version} is not semver`)
  if (pkg.license !== "MIT") problems.push(`license is ${pkg.license}`)
  if (!pkg.engines?.node) problems.push("no engines.node")
  if (!pkg.description) problems.push("no description")
  if (!files.includes("LICENSE") || fs.readFileSync(path.join(into, "LICENSE"), "utf8") !== license) problems.push("no LICENSE equal to the repository's")
  for (const section of ["dependencies", "peerDependencies", "optionalDependencies", "devDependencies"]) {
    for (const [dep, range] of Object.entries(pkg[section] ?? {})) {
      if (/^(workspace|catalog|link|file):/.test(range)) problems.push(`${section}.${dep} is still ${range}`)
    }
  }
  // Every file that exports, types or bin names is in the tarball, and none is a TypeScript source.
  const targets = []
  const collect = (value) => {
    if (typeof value === "string") targets.push(value)
    else if (value && typeof value === "object") Object.values(value).forEach(collect)
  }
  collect(pkg.exports)
  collect(pkg.types)
  collect(pkg.main)
  collect(pkg.bin)
  if (pkg.exports?.["."] === undefined) problems.push("no exports['.']")
  for (const target of targets) {
    const file = path.posix.normalize(target)
    if (!files.includes(file)) problems.push(`names ${target}, which is not in the tarball`)
    if (/\.[cm]?tsx?$/.test(file) && !/\.d\.[cm]?ts$/.test(file)) problems.push(`names the TypeScript source ${target}`)
  }
  // No compiled file left over from a source file since removed (prepack builds incrementally).
  const rootDir = (pkg.types ?? "./dist/index.d.ts").replace(/^\.\//, "").split("/")[0]
  for (const file of files.filter((f) => f.startsWith(`${rootDir}/`) && /\.(js|d\.ts)$/.test(f))) {
    const stem = path.join(dir, "src", file.slice(rootDir.length + 1).replace(/\.(js|d\.ts)$/, ""))
    // A component's source is .tsx.
    const source = fs.existsSync(`${stem}.tsx`) ? `${stem}.tsx` : `${stem}.ts`
    if (!fs.existsSync(source)) problems.push(`${file} has no source (${path.relative(root, source)}): stale output, remove ${rootDir}/ and pack again`)
  }
  // What the declarations import must be installed with the package.
  const declared = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})])
  const undeclared = new Set()
  for (const file of files.filter((f) => /\.d\.[cm]?ts$/.test(f))) {
    const text = fs.readFileSync(path.join(into, file), "utf8")
    for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["']([^"'.][^"']*)["']/g)) {
      const specifier = match[1]
      if (specifier.startsWith("node:") || builtins.has(specifier)) continue
      const parts = specifier.split("/")
      const dep = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]
      const types = `@types/${dep.replace(/^@/, "").replace("/", "__")}`
      if (!declared.has(dep) && !declared.has(types)) undeclared.add(`${dep} (${file})`)
      else if (!declared.has(types) && !shipsTypes(dir, dep)) undeclared.add(`${types}, the types of ${dep} (${file})`)
    }
  }
  if (undeclared.size > 0) problems.push(`its declarations import packages it does not depend on: ${[...undeclared].join(", ")}`)
  if (problems.length > 0) fail(`${name}: ${problems.join("; ")}`)
  console.log(`  ${name}@${pkg.version}: ${files.length} files, dependencies ${Object.entries(pkg.dependencies ?? {}).map(([d, r]) => `${d}@${r}`).join(" ")}`)
}

// A plain JavaScript host outside the workspace, installing the tarballs the way a user would.
const catalog = fs.readFileSync(path.join(root, "pnpm-workspace.yaml"), "utf8")
const express = /^\s+express:\s*"?([^"\s]+)"?\s*$/m.exec(catalog)?.[1]
if (!express) fail("no express version in the catalog of pnpm-workspace.yaml")
console.log(`\npack-check: npm install in ${app}`)
run("npm", ["init", "-y"], { cwd: app, stdio: ["ignore", "ignore", "inherit"], env: npmEnvironment() })
const appManifest = JSON.parse(fs.readFileSync(path.join(app, "package.json"), "utf8"))
appManifest.type = "module"
appManifest.private = true
fs.writeFileSync(path.join(app, "package.json"), JSON.stringify(appManifest, null, 2) + "\n")
// better-sqlite3 compiles with node-gyp when no prebuilt binary can be fetched; node-gyp then
// needs Node's headers. Where npm is not set up for them already, the headers installed beside
// this node (same version) are used rather than a download.
// Both cores for the native compile, unless told otherwise.
const npmEnv = npmEnvironment({ JOBS: process.env.JOBS ?? "max" })
const prefix = path.dirname(path.dirname(process.execPath))
const headers = path.join(prefix, "include", "node", "node_version.h")
if (!/^\s*nodedir\s*=/m.test(readOr(path.join(os.homedir(), ".npmrc"))) && fs.existsSync(headers)) {
  const version = ["MAJOR", "MINOR", "PATCH"].map((part) => new RegExp(`#define NODE_${part}_VERSION (\\d+)`).exec(readOr(headers))?.[1]).join(".")
  if (`v${version}` === process.version) npmEnv.npm_config_nodedir = prefix
}
function readOr(file) {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return ""
  }
}
const started = Date.now()
run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", ...packed, `express@${express}`, ...hostDependencies], { cwd: app, env: npmEnv })
console.log(`pack-check: installed in ${Math.round((Date.now() - started) / 1000)} s`)
const installed = fs.readdirSync(path.join(app, "node_modules", "@cmp")).sort()
const expected = libraries.map((l) => l.manifest.name.replace(/^@cmp\//, "")).sort()
if (installed.join() !== expected.join()) fail(`installed @cmp/${installed.join(", @cmp/")}; expected @cmp/${expected.join(", @cmp/")}`)

// Each command a package declares is linked where npm puts commands, and starts under plain node.
for (const { manifest } of libraries) {
  for (const command of Object.keys(manifest.publishConfig?.bin ?? manifest.bin ?? {})) {
    const link = path.join(app, "node_modules", ".bin", command)
    if (!fs.existsSync(link)) fail(`${manifest.name}: no ${command} in node_modules/.bin`)
  }
}
if (libraries.some(({ manifest }) => manifest.name === "@cmp/server")) {
  // An unknown command is refused after the entry point loaded: exit 1, naming it.
  const cmp = spawnSync(path.join(app, "node_modules", ".bin", "cmp-server"), ["no-such-command"], { cwd: app, encoding: "utf8" })
  if (cmp.status !== 1 || !cmp.stderr.includes("no-such-command")) {
    fail(`cmp-server no-such-command: exit ${cmp.status}, expected 1 naming the command: ${cmp.stderr}${cmp.error ?? ""}`)
  }
  console.log("pack-check: cmp-server runs under plain node")
}

const hostCopy = path.join(app, path.basename(host))
fs.copyFileSync(host, hostCopy)
console.log(`\npack-check: node ${path.basename(host)}`)
run(process.execPath, [hostCopy], {
  cwd: app,
  env: { ...process.env, NODE_OPTIONS: "", CMP_PACKAGES: libraries.map((l) => l.manifest.name).join(",") }
})

// A host on PostgreSQL installing the fetch adapter and that store alone: nothing native is built.
const fetchApp = path.join(work, "fetch-postgres")
fs.mkdirSync(fetchApp)
const chosen = ["@cmp/http-fetch", "@cmp/store-postgres"]
const needed = new Set()
const addWithDependencies = (name) => {
  if (needed.has(name)) return
  const library = libraries.find((l) => l.manifest.name === name)
  if (!library) fail(`${name} was not packed`)
  needed.add(name)
  for (const dep of Object.keys(library.manifest.dependencies ?? {})) if (packedByName.has(dep)) addWithDependencies(dep)
}
chosen.forEach(addWithDependencies)
if (needed.has("@cmp/store-sqlite")) fail(`${chosen.join(" with ")} depend on @cmp/store-sqlite: ${[...needed].join(", ")}`)
// docs/embedding.md gives this install as `npm install $CMP/packed/cmp-{core,…}-<version>.tgz`.
const documented = /packed\/cmp-\{([^}]+)\}-([^\s]+)\.tgz/.exec(readOr(path.join(root, "docs", "embedding.md")))
const documentedNames = (documented?.[1].split(",") ?? []).map((n) => `@cmp/${n}`).sort()
const neededVersions = new Set(libraries.filter((l) => needed.has(l.manifest.name)).map((l) => l.manifest.version))
if (documentedNames.join() !== [...needed].sort().join() || neededVersions.size !== 1 || !neededVersions.has(documented?.[2])) {
  fail(`docs/embedding.md installs ${documented?.[0] ?? "nothing"} for the fetch handler on PostgreSQL; it needs ${[...needed].map((n) => tarballName(libraries.find((l) => l.manifest.name === n).manifest)).join(" ")}`)
}
const serverManifest = JSON.parse(fs.readFileSync(path.join(root, "packages", "server", "package.json"), "utf8"))
const pgVersion = serverManifest.devDependencies?.pg
if (!pgVersion) fail("no pg version in the devDependencies of packages/server")
fs.writeFileSync(path.join(fetchApp, "package.json"), JSON.stringify({ name: "fetch-postgres", private: true, type: "module" }, null, 2) + "\n")
console.log(`\npack-check: npm install ${[...needed].join(" ")} pg@${pgVersion} in ${fetchApp}`)
run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", ...[...needed].map((n) => packedByName.get(n)), `pg@${pgVersion}`], { cwd: fetchApp, env: npmEnv })
// A module compiled at install time is a `.node` file under a `build/` directory (node-gyp's
// output). Prebuilt binaries that arrive as packages of their own are not built: msgpackr's
// optional extractor (through @effect/platform, which every store needs) is one, and msgpackr
// runs without it.
const built = []
const prebuilt = []
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    const relative = path.relative(fetchApp, file)
    if (entry.isDirectory()) {
      if (entry.name === "better-sqlite3") built.push(relative)
      walk(file)
    } else if (entry.name.endsWith(".node")) {
      ;(relative.split(path.sep).includes("build") ? built : prebuilt).push(relative)
    }
  }
}
walk(path.join(fetchApp, "node_modules"))
if (built.length > 0) fail(`${chosen.join(" with ")} built native modules: ${built.join(", ")}`)
const sqliteTree = spawnSync("npm", ["ls", "better-sqlite3", "--all", "--parseable"], { cwd: fetchApp, encoding: "utf8", env: npmEnv })
if (sqliteTree.stdout.trim() !== "") fail(`npm ls better-sqlite3 in ${fetchApp}: ${sqliteTree.stdout.trim()}`)
console.log(`pack-check: no native module built, no better-sqlite3${prebuilt.length > 0 ? `; prebuilt binaries installed as packages: ${prebuilt.join(", ")}` : ""}`)
const fetchHost = path.join(fetchApp, "fetch-postgres.mjs")
fs.copyFileSync(path.join(root, "scripts", "pack-fetch-postgres.mjs"), fetchHost)
console.log(`\npack-check: node ${path.basename(fetchHost)}`)
run(process.execPath, [fetchHost], { cwd: fetchApp, env: { ...process.env, NODE_OPTIONS: "" } })

console.log(`\npack-check: ${libraries.length} packages packed, installed with npm and run by plain node; @cmp/http-fetch on PostgreSQL alone, no native module`)
