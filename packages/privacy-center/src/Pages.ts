import {
  centerById,
  centerForHost,
  guestPublicKey,
  OrganizationLimits,
  type PageCenter,
  type PageRequest,
  type PageResponse,
  pageHost,
  PrivacyCenterPages,
  publishedCookies,
  Storage
} from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { readContent } from "./Content.js"
import { iconName, iconSvg } from "./Icon.js"
import { chooseLanguage } from "./Language.js"
import { renderPolicy } from "./Markdown.js"
import { renderNotFound } from "./NotFound.js"
import { renderPrivacyCenter } from "./Page.js"
import { preferencesScript, preferencesScriptName } from "./Preferences.js"
import { renderRobotsTxt } from "./Robots.js"
import { renderStylesheet } from "./Stylesheet.js"

/**
 * The pages as a server answers them: the routes, their headers, and a cache of rendered
 * policies. Routes (GET and HEAD):
 *
 * - `/privacy/<id>`: the center's page; `/privacy/<id>/style.css`: its stylesheet;
 * - `/privacy/assets/<file>`: the preferences script (named by its content), the 404 page's
 *   stylesheet and the pages' icon, kept by browsers for a year;
 * - `/` and `/robots.txt` of a page host (a `ready` domain of usage `privacy-center` or
 *   `preference-center`): the center it serves and the crawl rule of the domain.
 *
 * Anything else under those paths is the 404 page, the same for every unknown id or host.
 */

const PREFIX = "/privacy/"
const ASSETS = "assets/"
const notFoundStylesheet = "not-found.css"

/** Rendered policies by center and version: a center's policy renders once per change of the center. */
const POLICY_CACHE_SIZE = 1_000

const policyCache = () => {
  const kept = new Map<string, string>()
  return (center: PageCenter["center"]): string => {
    const key = `${center.id}\u0000${center.version}`
    const found = kept.get(key)
    if (found !== undefined) return found
    const html = renderPolicy(center.privacy_policy)
    if (kept.size >= POLICY_CACHE_SIZE) kept.delete(kept.keys().next().value!)
    kept.set(key, html)
    return html
  }
}

/**
 * What the browser may load on a page: its own origin's files, and the logo's origin for
 * images; no framing, no `<base>`, no plugin, forms posting only here.
 */
const contentSecurityPolicy = (imageOrigins: ReadonlyArray<string>) =>
  [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${["'self'", ...imageOrigins].join(" ")}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'"
  ].join("; ")

const pageHeaders = (lang: string, imageOrigins: ReadonlyArray<string>, cache: string): Record<string, string> => ({
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": contentSecurityPolicy(imageOrigins),
  "referrer-policy": "no-referrer",
  "content-language": lang,
  // The language follows `Accept-Language`, which a shared cache must key on.
  vary: "Accept-Language",
  "cache-control": cache
})

/** Where a file of `/privacy/assets/` is, under the pages' mount. */
const assetUrl = (request: PageRequest, name: string) => `${request.base}${PREFIX}${ASSETS}${name}`

const year = 31_536_000

const asset = (contentType: string, body: string, cache: string, route: string): PageResponse => ({
  status: 200,
  headers: { "content-type": contentType, "cache-control": cache, "referrer-policy": "no-referrer" },
  body,
  route
})

const queryParam = (query: string, name: string): string | undefined => {
  if (query === "") return undefined
  try {
    return new URLSearchParams(query).get(name) ?? undefined
  } catch {
    return undefined
  }
}

/** The pages' answers over the store; `PrivacyCenterPages` of the platform. */
export const makePrivacyCenterPages = Effect.gen(function*() {
  const context = yield* Effect.context<Storage | OrganizationLimits>()
  const policyOf = policyCache()

  const notFound = (request: PageRequest, route: string): PageResponse => {
    const page = renderNotFound({
      acceptLanguage: request.acceptLanguage,
      stylesheet: assetUrl(request, notFoundStylesheet),
      icon: assetUrl(request, iconName)
    })
    return { status: 404, headers: { ...pageHeaders(page.lang, [], "no-store"), "x-robots-tag": "noindex" }, body: page.html, route }
  }

  const page = (request: PageRequest, found: PageCenter, route: string) =>
    Effect.gen(function*() {
      const { center } = found
      const display = center.display_cookies ?? "none"
      const cookies = display === "list" ? yield* publishedCookies(center.organization_id) : []
      const publicKey = display === "choices" ? yield* guestPublicKey(center) : undefined
      const content = readContent(center.content)
      const lang = chooseLanguage({
        query: queryParam(request.query, "lang"),
        acceptLanguage: request.acceptLanguage,
        languages: center.languages,
        withTexts: content.languages
      })
      const rendered = renderPrivacyCenter({
        center,
        cookies,
        lang,
        assets: {
          stylesheet: `${request.base}${PREFIX}${encodeURIComponent(center.id)}/style.css?v=${center.version}`,
          script: assetUrl(request, preferencesScriptName),
          icon: assetUrl(request, iconName)
        },
        apiBase: request.apiBase,
        publicKey: publicKey ?? null,
        policyHtml: policyOf(center),
        content
      })
      return {
        status: 200,
        headers: pageHeaders(rendered.lang, rendered.imageOrigins, rendered.showsChoices ? "no-store" : "no-cache"),
        body: rendered.html,
        route
      } satisfies PageResponse
    })

  const route = (request: PageRequest): Effect.Effect<PageResponse | undefined, never, Storage | OrganizationLimits> =>
    Effect.gen(function*() {
      const path = request.path
      if (path === "/") {
        const found = yield* centerForHost(request.host)
        return found === undefined ? notFound(request, "/") : yield* page(request, found, "/")
      }
      if (path === "/robots.txt") {
        const domain = yield* pageHost(request.host)
        return domain === undefined
          ? notFound(request, "/robots.txt")
          : asset("text/plain; charset=utf-8", renderRobotsTxt(domain.bots_crawl), "public, max-age=300", "/robots.txt")
      }
      if (!path.startsWith(PREFIX)) return path === "/privacy" ? notFound(request, "/privacy") : undefined
      const rest = path.slice(PREFIX.length)
      if (rest.startsWith(ASSETS)) {
        const name = rest.slice(ASSETS.length)
        if (name === preferencesScriptName) {
          return asset("text/javascript; charset=utf-8", preferencesScript, `public, max-age=${year}, immutable`, `/privacy/assets/${name}`)
        }
        if (name === notFoundStylesheet) {
          return asset("text/css; charset=utf-8", renderStylesheet(), `public, max-age=${year}, immutable`, `/privacy/assets/${name}`)
        }
        if (name === iconName) return asset("image/svg+xml", iconSvg, `public, max-age=${year}, immutable`, `/privacy/assets/${name}`)
        return notFound(request, "/privacy/assets/:file")
      }
      const [encoded = "", file, ...more] = rest.split("/")
      let id: string
      try {
        id = decodeURIComponent(encoded)
      } catch {
        return notFound(request, "/privacy/:id")
      }
      if (more.length > 0 || (file !== undefined && file !== "" && file !== "style.css")) return notFound(request, "/privacy/:id")
      const found = yield* centerById(id, request.host)
      if (file === "style.css") {
        return found === undefined
          ? notFound(request, "/privacy/:id/style.css")
          : asset("text/css; charset=utf-8", renderStylesheet(found.center), "public, max-age=300", "/privacy/:id/style.css")
      }
      return found === undefined ? notFound(request, "/privacy/:id") : yield* page(request, found, "/privacy/:id")
    })

  const owns = (path: string) => path === "/privacy" || path.startsWith(PREFIX)

  return PrivacyCenterPages.of({
    owns,
    answer: (request) => {
      const served = owns(request.path) || request.path === "/" || request.path === "/robots.txt"
      if (!served) return Effect.succeed(undefined)
      if (request.method !== "GET" && request.method !== "HEAD") {
        return Effect.succeed({
          status: 405,
          headers: { "content-type": "text/plain; charset=utf-8", allow: "GET, HEAD" },
          body: `Method ${request.method} is not supported here\n`,
          route: owns(request.path) ? "/privacy/*" : request.path
        })
      }
      return Effect.provide(route(request), context)
    }
  })
})

/** The pages on the store's services. */
export const PrivacyCenterPagesLive: Layer.Layer<PrivacyCenterPages, never, Storage | OrganizationLimits> = Layer.effect(
  PrivacyCenterPages,
  makePrivacyCenterPages
)
