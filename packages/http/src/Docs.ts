import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { ApiResponse } from "./Message.js"

/**
 * An offline API docs page: Swagger UI from the installed `swagger-ui-dist` package. Only the
 * files the page loads are served (read once, kept in memory): the rest of the package (its own
 * `index.html` pointing at a remote demo, `oauth2-redirect.html`, `package.json`) is not ours to
 * publish. Every answer forbids framing and carries a policy that lets the page load nothing but
 * these files and the API's own document: no inline script, no other origin.
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

// No validator badge: it would send the document to validator.swagger.io.
const init = `window.ui = SwaggerUIBundle({ url: new URL("../openapi.json", location.href).href, dom_id: "#ui", validatorUrl: null })`

/** Swagger UI's own stylesheet holds its icons as `data:` images. */
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const guarded = (contentType: string, more: Record<string, string> = {}): Record<string, string> => ({
  "content-type": contentType,
  "content-security-policy": contentSecurityPolicy,
  "x-frame-options": "DENY",
  ...more
})

/** The package's files the page loads, and their types. */
const packaged: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "application/javascript; charset=utf-8"
}

let directory: string | undefined
const assets = new Map<string, Uint8Array>()

const asset = (name: string): Uint8Array => {
  const kept = assets.get(name)
  if (kept !== undefined) return kept
  directory ??= path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))
  const bytes = fs.readFileSync(path.join(directory, name))
  assets.set(name, bytes)
  return bytes
}

/** The answer for `/docs/<rest>`; undefined for any other name. */
export const docsAsset = (rest: string): ApiResponse | undefined => {
  if (rest === "") return { status: 200, headers: guarded("text/html; charset=utf-8"), body: page }
  if (rest === "init.js") return { status: 200, headers: guarded("application/javascript; charset=utf-8"), body: init }
  const type = Object.hasOwn(packaged, rest) ? packaged[rest] : undefined
  if (type === undefined) return undefined
  return { status: 200, headers: guarded(type, { "cache-control": "public, max-age=3600" }), body: asset(rest) }
}
