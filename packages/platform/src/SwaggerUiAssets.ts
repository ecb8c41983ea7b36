import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

let directory: string | undefined
const assets = new Map<string, Uint8Array>()

/**
 * Swagger UI's files for the REST API's docs page (what `@cmp/http` calls `DocsAssets`), from
 * the installed `swagger-ui-dist`: each read once, kept in memory. Here, beside the platform
 * both HTTP adapters compose, because reading files is Node's business and `@cmp/http` runs on
 * any runtime.
 */
export const swaggerUiAssets = (name: string): Uint8Array => {
  const kept = assets.get(name)
  if (kept !== undefined) return kept
  directory ??= path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))
  const bytes = fs.readFileSync(path.join(directory, name))
  assets.set(name, bytes)
  return bytes
}
