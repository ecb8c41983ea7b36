import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { ApiResponse } from "./Message.js"

/**
 * An offline API docs page: Swagger UI's own files, served from the installed `swagger-ui-dist`
 * package, read once and kept in memory (the page needs three of them).
 */

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Consent API documentation</title>
  <link rel="stylesheet" href="./swagger-ui.css">
</head>
<body>
  <div id="ui"></div>
  <script src="./swagger-ui-bundle.js"></script>
  <script src="./init.js"></script>
</body>
</html>`

const init = `window.ui = SwaggerUIBundle({ url: new URL("../openapi.json", location.href).href, dom_id: "#ui" })`

const types: Record<string, string> = {
  ".js": "application/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".png": "image/png"
}

let directory: string | undefined
const assets = new Map<string, Uint8Array | null>()

/** A file of the package by its bare name (no sub-directories, so no path can escape it). */
const asset = (name: string): Uint8Array | null => {
  if (!/^[\w.-]+$/.test(name) || name.startsWith(".")) return null
  const kept = assets.get(name)
  if (kept !== undefined) return kept
  directory ??= path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))
  let bytes: Uint8Array | null = null
  try {
    bytes = fs.readFileSync(path.join(directory, name))
  } catch {
    bytes = null
  }
  if (assets.size < 64) assets.set(name, bytes)
  return bytes
}

/** The answer for `/docs/<rest>`; undefined when there is no such file. */
export const docsAsset = (rest: string): ApiResponse | undefined => {
  if (rest === "") return { status: 200, headers: { "content-type": types[".html"]! }, body: page }
  if (rest === "init.js") return { status: 200, headers: { "content-type": types[".js"]! }, body: init }
  const bytes = asset(rest)
  if (bytes === null) return undefined
  return {
    status: 200,
    headers: { "content-type": types[path.extname(rest)] ?? "application/octet-stream", "cache-control": "public, max-age=3600" },
    body: bytes
  }
}
