import * as Effect from "effect/Effect"
import { Forbidden } from "../Domain/Errors.js"
import { Storage } from "../Engine/Ports.js"
import type { EndUserPrincipal } from "../Engine/Principal.js"
import { OriginCache } from "../Properties/OriginCache.js"
import { eq } from "../Engine/Query.js"
import { DomainsResource } from "../Properties/Domains.js"
import { PrivacyCentersResource } from "../Properties/PrivacyCenters.js"
import { PropertiesResource } from "../Properties/Properties.js"

/**
 * The web origins that are an organization's own: a browser page at one of them may record
 * consent with the organization's public key or a consent token. They are the hosts of its
 * properties' `website`s (with the port a website names), of its `ready` domains and of its
 * privacy centers' custom domains, over https (kept per organization by `OriginCache`).
 */

const hostOf = (url: string): string | undefined => {
  try {
    return new URL(url).host.toLowerCase()
  } catch {
    return undefined
  }
}

const PAGE = 1000

/** Every host the organization's rows name, read page by page. */
const loadHosts = (organizationId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const hosts = new Set<string>()
    const each = <A>(table: Parameters<typeof storage.repository>[0], extra: ReturnType<typeof eq> | undefined, use: (row: A) => void) =>
      Effect.gen(function*() {
        for (let skip = 0;; skip += PAGE) {
          const page = yield* storage.repository(table).find({
            count: false,
            where: [eq("organization_id", organizationId), ...(extra ? [extra] : [])],
            sort: [{ field: "id", direction: 1 }],
            limit: PAGE,
            skip
          })
          for (const row of page.data) use(row as A)
          if (page.data.length < PAGE) return
        }
      })
    yield* each<{ website: string | null }>(PropertiesResource.tableDef, undefined, (p) => {
      const host = p.website ? hostOf(p.website) : undefined
      if (host) hosts.add(host)
    })
    yield* each<{ id: string }>(DomainsResource.tableDef, eq("status", "ready"), (d) => hosts.add(d.id.toLowerCase()))
    yield* each<{ custom_domains: ReadonlyArray<string> | null }>(PrivacyCentersResource.tableDef, undefined, (c) => {
      for (const h of c.custom_domains ?? []) hosts.add(h.toLowerCase())
    })
    return hosts as ReadonlySet<string>
  }).pipe(Effect.orDie)

const loopback = new Set(["localhost", "127.0.0.1", "[::1]"])

/**
 * The host an `Origin` names when its scheme may record consent: `https`, or plain `http` on a
 * loopback host where the server itself serves plain HTTP (development).
 */
export const originHost = (origin: string, allowHttp: boolean): string | undefined => {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return undefined
  }
  // An origin is a scheme, a host and a port; anything more is not one a browser sends.
  if (url.pathname !== "/" || url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") return undefined
  if (url.protocol === "https:") return url.host.toLowerCase()
  if (url.protocol === "http:" && allowHttp && loopback.has(url.hostname.toLowerCase())) return url.host.toLowerCase()
  return undefined
}

/** Refuses a request from a web page that is not the organization's own. */
export const requireOrigin = (principal: EndUserPrincipal, origin: string, allowHttp: boolean) =>
  Effect.gen(function*() {
    const host = originHost(origin, allowHttp)
    const hosts = host === undefined
      ? undefined
      : yield* Effect.flatMap(OriginCache, (cache) => cache.read(principal.organizationId, loadHosts(principal.organizationId)))
    if (host === undefined || !hosts!.has(host)) {
      return yield* Effect.fail(new Forbidden({ message: `The origin ${origin} is not one of this organization's websites or domains` }))
    }
  })
