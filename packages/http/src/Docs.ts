import type { ApiResponse } from "./Message.js"

/**
 * An offline API docs page: Swagger UI from the `swagger-ui-dist` package, whose files the host
 * hands in (`docsAssets`), since reading a package's files is the host's business, not the
 * HTTP layer's. Only the files the page loads are asked for: the rest of the package (its own
 * `index.html` pointing at a remote demo, `oauth2-redirect.html`, `package.json`) is not ours to
 * publish. Every answer forbids framing and carries a policy that lets the page load nothing but
 * these files and the API's own document: no inline script, no other origin.
 */

/**
 * The bytes of a file of the `swagger-ui-dist` package by its name (`swagger-ui.css`), asked for
 * only the files the page loads; undefined when the host has none (the page is then served
 * without Swagger UI, and the file is a 404).
 */
export type DocsAssets = (name: string) => Uint8Array | undefined

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

/** The names of the `swagger-ui-dist` files the docs page loads: all a `DocsAssets` is asked for. */
export const docsAssetNames: ReadonlyArray<string> = Object.keys(packaged)

/** The answer for `/docs/<rest>`; undefined for any other name. */
export const docsAsset = (rest: string, assets: DocsAssets | undefined): ApiResponse | undefined => {
  if (rest === "") return { status: 200, headers: guarded("text/html; charset=utf-8"), body: page }
  if (rest === "init.js") return { status: 200, headers: guarded("application/javascript; charset=utf-8"), body: init }
  const type = Object.hasOwn(packaged, rest) ? packaged[rest] : undefined
  const bytes = type === undefined ? undefined : assets?.(rest)
  if (type === undefined || bytes === undefined) return undefined
  return { status: 200, headers: guarded(type, { "cache-control": "public, max-age=3600" }), body: bytes }
}
