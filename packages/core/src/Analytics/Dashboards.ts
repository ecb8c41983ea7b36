import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { answers, defineAction } from "../Engine/Action.js"
import { nowSeconds } from "../Engine/Clock.js"
import { Dashboard, DashboardCreate, DashboardEntry, DashboardUpdate, Languages } from "../Domain/Analytics.js"
import { Forbidden, InvalidInput } from "../Domain/Errors.js"
import { UrlSigner } from "../Engine/Secrets.js"
import { type Page, type Row, Storage } from "../Engine/Ports.js"
import { canAccess, isOperator, organizationsOf, type Principal } from "../Engine/Principal.js"
import { type Condition, eq, inList, parseFindQuery } from "../Engine/Query.js"
import { defineResource } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { ensureMethodFor } from "../Engine/Bodies.js"
import { requireExistingOrganization } from "../Engine/Gates.js"
import { toOutput } from "../Engine/Views.js"
import { defaultLanguages as defaultLanguagesValue, Settings } from "../Engine/Settings.js"

/** The operator's catalogue of dashboards (`analytics/dashboards`): platform-wide or for one organization. */
export const DashboardsResource = defineResource({
  name: "dashboard",
  path: "analytics/dashboards",
  table: "dashboards",
  indexes: [{ name: "dashboards_organization", columns: ["organization_id", "created_at"] }],
  output: DashboardEntry,
  createInput: DashboardCreate,
  updateInput: DashboardUpdate,
  // A position between two others may be a fraction.
  privateFields: { order: field.optionalReal },
  methods: ["find", "get", "create", "update", "patch", "remove"],
  operatorOnly: ["find", "get", "create", "update", "patch", "remove"],
  hooks: {
    create: (_p, row) =>
      Effect.gen(function*() {
        if (typeof row.organization_id === "string") yield* requireExistingOrganization(row.organization_id)
        return { row }
      })
  }
})

/** What an organization sees (`analytics/dashboards-urls`): its entries and the platform's, with a signed `url`. */
export const DashboardUrlsResource = defineResource({
  name: "dashboard",
  path: "analytics/dashboards-urls",
  // Signed links handed out, not configuration.
  audited: false,
  ownActions: true,
  table: "dashboards",
  indexes: [{ name: "dashboards_organization", columns: ["organization_id", "created_at"] }],
  output: Dashboard,
  methods: ["find"],
  transient: ["url"],
  // A signed url opens the dashboard until it expires.
  revealsCredentials: "every",
  privateFields: {
    order: field.optionalReal,
    target_url: field.string,
    organization_id: field.optionalString,
    created_at: field.timestamp,
    updated_at: field.timestamp,
    version: field.number
  },
  hooks: {
    find: (principal, query) => Effect.succeed({ ...query, where: [...query.where, ...dashboardScope(principal)] })
  }
})

const dashboardScope = (principal: Principal): ReadonlyArray<Condition> => {
  const orgs = organizationsOf(principal)
  if (orgs === "all") return []
  return [{ _tag: "Or", branches: [[eq("organization_id", null)], [inList("organization_id", orgs)]] }]
}

const organizationRequired = (message: string) =>
  new InvalidInput({ message: `Invalid query: organization_id ${message}`, errors: { organization_id: message } })

/**
 * The organization whose links a find signs: `?organization_id=`, or the only one the principal
 * acts in. The operator and a member of several name it (a link opens one organization's
 * dashboard); one the principal cannot see is 403, as a find naming it is elsewhere.
 */
const linksOrganization = (principal: Principal, named: unknown) =>
  Effect.gen(function*() {
    if (named === undefined) {
      const orgs = organizationsOf(principal)
      if (orgs !== "all" && orgs.length === 1) return orgs[0]!
      return yield* Effect.fail(organizationRequired("is required: name the organization whose links are signed"))
    }
    if (typeof named !== "string" || named === "") {
      return yield* Effect.fail(organizationRequired("must be one organization id: links are signed for one organization"))
    }
    if (!canAccess(principal, named)) {
      return yield* Effect.fail(new Forbidden({ message: "You are not allowed to read another organization's data" }))
    }
    if (isOperator(principal)) yield* requireExistingOrganization(named)
    return named
  })

/** The organization goes into the signed URL, so the dashboard host knows whose data to show. */
const withOrganization = (target: string, organizationId: string): string => {
  const url = new URL(target)
  url.searchParams.set("organization_id", organizationId)
  return url.toString()
}

export const DEFAULT_DASHBOARD_URL_TTL_SECONDS = 900

/** `url` = target + `expires` + `signature` (HMAC-SHA256 by the adapter's `UrlSigner`). */
export const findDashboardUrls = (principal: Principal, rawQuery: Record<string, unknown>) =>
  Effect.gen(function*() {
    const def = DashboardUrlsResource
    yield* ensureMethodFor(def, principal, "find")
    const { organization_id: named, ...rest } = rawQuery
    const organizationId = yield* linksOrganization(principal, named)
    const parsed = parseFindQuery(rest, { fields: def.queryFields })
    if (Either.isLeft(parsed)) return yield* Effect.fail(parsed.left)
    // Its own entries and the platform's.
    const offered: Condition = { _tag: "Or", branches: [[eq("organization_id", null)], [eq("organization_id", organizationId)]] }
    const query = { ...parsed.right.query, where: [...parsed.right.query.where, offered] }
    const page = yield* (yield* Storage).repository(def.tableDef).find(query)
    const signer = yield* UrlSigner
    const settings = yield* Settings
    const expires = (yield* nowSeconds) + (settings.dashboardUrlTtlSeconds ?? DEFAULT_DASHBOARD_URL_TTL_SECONDS)
    const data: Array<Row> = []
    for (const row of page.data) {
      const url = yield* signer.sign(withOrganization(row.target_url, organizationId), expires)
      const out: Row = toOutput(def, row, { url })
      data.push(query.select ? Object.fromEntries(Object.entries(out).filter(([k]) => k === "id" || query.select!.includes(k))) : out)
    }
    return { ...page, data } satisfies Page<Row>
  })

/** `GET /v1/languages`: the object itself, from configuration. */
export const getLanguages = (_principal: Principal) =>
  Effect.map(Settings, (s) => s.languages ?? defaultLanguagesValue)


// ---------------------------------------------------------------- declarations

export const DashboardUrlsAction = defineAction({
  place: "analytics/dashboards-urls",
  name: "find",
  method: "GET",
  path: "analytics/dashboards-urls",
  summary: "Find the organization's dashboards (its own and the platform's), each `url` signed by the server for " +
    "that organization: `organization_id`, `expires` (Unix seconds, 15 minutes ahead by default) and `signature` = " +
    "base64url HMAC-SHA256 of the URL with both",
  auth: "bearer",
  query: "find",
  answers: answers.pageOf(DashboardUrlsResource),
  status: 200,
  parameters: [{
    name: "organization_id",
    in: "query",
    required: false,
    description: "The organization whose links are signed: implied for a caller of one organization, " +
      "required (400 without it) for the operator and a member of several; another organization is 403"
  }],
  revealsCredentials: DashboardUrlsResource.revealsCredentials !== undefined,
  run: (principal, request) => findDashboardUrls(principal, { ...request.query })
})

export const LanguagesAction = defineAction({
  place: "languages",
  name: "find",
  method: "GET",
  path: "languages",
  summary: "The languages offered (the object itself, not a page), from configuration",
  auth: "bearer",
  answers: answers.schema("Languages", Languages),
  status: 200,
  errors: [401, 429],
  run: (principal) => getLanguages(principal)
})
