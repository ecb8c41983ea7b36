/**
 * What `pnpm pack:packages` (scripts/pack-packages.mjs) and `pnpm pack:check`
 * (scripts/pack-check.mjs) share: which packages are the libraries, the names of their tarballs,
 * and the environment npm runs in.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export const root = path.resolve(import.meta.dirname, "..")

/** The library packages: every package under packages/ that is not private, with its manifest. */
export const libraryPackages = () =>
  fs
    .readdirSync(path.join(root, "packages"))
    .map((dir) => path.join(root, "packages", dir))
    .filter((dir) => fs.existsSync(path.join(dir, "package.json")))
    .map((dir) => ({ dir, manifest: JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) }))
    .filter(({ manifest }) => manifest.private !== true)

/** The tarball name `pnpm pack` gives a package, without its version: `@cmp/core` → `cmp-core`. */
export const tarballPrefix = (name) => name.replace(/^@/, "").replace("/", "-")

/** The file `pnpm pack` writes for a manifest: `cmp-core-0.1.0.tgz`. */
export const tarballName = (manifest) => `${tarballPrefix(manifest.name)}-${manifest.version}.tgz`

/**
 * The environment for npm when a pnpm script runs it: without the variables pnpm sets for its
 * own run (`npm_config_*` for its settings, `npm_package_*`, `npm_lifecycle_*`…). npm would warn
 * about each setting it does not know ("Unknown env config") and take the rest for its own, such
 * as pnpm's global rc file for npm's. npm reads its settings from its own `.npmrc` files instead.
 */
export const npmEnvironment = (extra = {}) => {
  const env = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^p?npm_/.test(name)) env[name] = value
  }
  return { ...env, ...extra }
}
