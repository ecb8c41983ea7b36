import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { OrganizationsResource } from "../Accounts/Organizations.js"
import type { Domain, PrivacyCenter } from "../Domain/Property.js"
import { OrganizationLimits } from "../Engine/OrganizationLimits.js"
import { Storage } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { CookiesResource } from "./Cookies.js"
import { DomainsResource, isPageHost } from "./Domains.js"
import { PrivacyCentersResource } from "./PrivacyCenters.js"
import { VendorsResource } from "./Vendors.js"

/**
 * Which privacy center a page request finds, read with no principal: the page is public. The
 * rules that keep one organization's page off another's host live here, for every host that
 * serves pages:
 *
 * - a host serves a page at `/` only when it is a page host (`privacy-center` or
 *   `preference-center`) of the center's organization, `ready` and enabled, and the center names
 *   it (`custom_domains`) or the domain names the center (`entity_id`);
 * - `/privacy/<id>` is served on any host but another organization's page host, so no
 *   organization's proven host shows a page of someone else's.
 */

/** A center as a page is rendered from it, with the page host it was found by, if any. */
export interface PageCenter {
  readonly center: PrivacyCenter
  /** The page host the request came to, when it is one (its `bots_crawl` makes `robots.txt`). */
  readonly host: Domain | undefined
}

/** Longest host name a DNS name can be; anything longer is no host of ours and never reaches the store. */
const MAX_HOST = 253

/** The request's `Host` without its port, lower-cased, when it is a plausible host name. */
export const pageHostName = (host: string | undefined): string | undefined => {
  if (host === undefined) return undefined
  const name = host.trim().toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "")
  return name !== "" && name.length <= MAX_HOST && /^[a-z0-9.-]+$/.test(name) ? name : undefined
}

/** The `ready`, enabled page host of that name, whichever organization proved it. */
export const pageHost = (host: string | undefined): Effect.Effect<Domain | undefined, never, Storage> =>
  Effect.gen(function*() {
    const name = pageHostName(host)
    if (name === undefined) return undefined
    const found = yield* (yield* Storage).repository(DomainsResource.tableDef).get(name)
    if (Option.isNone(found)) return undefined
    const domain = found.value as unknown as Domain
    return domain.status === "ready" && domain.enabled && isPageHost(domain) ? domain : undefined
  })

const centerRow = (id: string): Effect.Effect<PrivacyCenter | undefined, never, Storage> =>
  Effect.flatMap(Storage, (storage) =>
    Effect.map(storage.repository(PrivacyCentersResource.tableDef).get(id), (row) =>
      Option.getOrUndefined(row) as unknown as PrivacyCenter | undefined))

/** How many centers of one organization a host's look-up reads to find the one naming it. */
const CENTERS_PER_HOST_LOOKUP = 200

/** The center a page host serves at `/`: the one it names by `entity_id`, else the oldest that lists it. */
export const centerForHost = (host: string | undefined): Effect.Effect<PageCenter | undefined, never, Storage> =>
  Effect.gen(function*() {
    const domain = yield* pageHost(host)
    if (domain === undefined) return undefined
    if (domain.entity_id !== null && domain.entity_id !== undefined) {
      const center = yield* centerRow(domain.entity_id)
      return center !== undefined && center.organization_id === domain.organization_id ? { center, host: domain } : undefined
    }
    const page = yield* (yield* Storage).repository(PrivacyCentersResource.tableDef).find({
      where: [eq("organization_id", domain.organization_id)],
      sort: [{ field: "created_at", direction: 1 }, { field: "id", direction: 1 }],
      limit: CENTERS_PER_HOST_LOOKUP,
      skip: 0,
      count: false
    })
    const center = (page.data as unknown as ReadonlyArray<PrivacyCenter>).find((c) => (c.custom_domains ?? []).includes(domain.id))
    return center === undefined ? undefined : { center, host: domain }
  })

/** The center of `/privacy/<id>`, unless the request came to another organization's page host. */
export const centerById = (id: string, host: string | undefined): Effect.Effect<PageCenter | undefined, never, Storage> =>
  Effect.gen(function*() {
    if (id === "" || id.length > 255) return undefined
    const center = yield* centerRow(id)
    if (center === undefined) return undefined
    const domain = yield* pageHost(host)
    if (domain !== undefined && domain.organization_id !== center.organization_id) return undefined
    return { center, host: domain }
  })

/** A published cookie as the page's table shows it: the vendor by its catalogue id. */
export interface PageCookie {
  readonly name: string
  readonly domain: string
  readonly lifetime: number | null
  readonly vendor: string | null
}

/** How many cookies a page lists at most. */
const MAX_PAGE_COOKIES = 500

/** The organization's published cookies, oldest first, each with its vendor's catalogue id. */
export const publishedCookies = (organizationId: string): Effect.Effect<ReadonlyArray<PageCookie>, never, Storage> =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const cookies = yield* storage.repository(CookiesResource.tableDef).find({
      where: [eq("organization_id", organizationId), eq("status", "published")],
      sort: [{ field: "created_at", direction: 1 }, { field: "id", direction: 1 }],
      limit: MAX_PAGE_COOKIES,
      skip: 0,
      count: false
    })
    if (cookies.data.length === 0) return []
    const vendors = yield* storage.repository(VendorsResource.tableDef).find({
      where: [eq("organization_id", organizationId)],
      sort: [],
      ordered: false,
      limit: 10_000,
      skip: 0,
      count: false
    })
    const vendorName = new Map(vendors.data.map((v) => [v.id as string, v.metadata_id as string]))
    return cookies.data.map((c) => ({
      name: c.name as string,
      domain: c.domain as string,
      lifetime: typeof c.lifetime === "number" ? c.lifetime : null,
      vendor: typeof c.vendor_id === "string" ? vendorName.get(c.vendor_id) ?? null : null
    }))
  })

/**
 * The public key the page records a guest's choices with: only where guests may choose there
 * (the center does not require a personal link) and may be stored at all (the organization has
 * `store_guest_cmp_consents`); otherwise none, and the page asks for a link.
 */
export const guestPublicKey = (center: PrivacyCenter): Effect.Effect<string | undefined, never, Storage | OrganizationLimits> =>
  Effect.gen(function*() {
    if (center.auth_required) return undefined
    const features = yield* Effect.flatMap(OrganizationLimits, (limits) => limits.featuresOf(center.organization_id))
    if (!features.has("store_guest_cmp_consents")) return undefined
    const organization = yield* (yield* Storage).repository(OrganizationsResource.tableDef).get(center.organization_id)
    return Option.match(organization, {
      onNone: () => undefined,
      onSome: (o) => (typeof o.public_api_key === "string" ? o.public_api_key : undefined)
    })
  })
