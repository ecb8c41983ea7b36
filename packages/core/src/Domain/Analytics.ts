import * as Schema from "effect/Schema"
import { Audit, Id, Name, opt, Text, Url } from "./Common.js"

// ---------------------------------------------------------------- dashboards

export const DashboardCategory = Schema.Literal("analytics", "home")
export const DashboardProduct = Schema.Literal("cmp", "pmp", "integration", "acm")
export const AggregationPeriod = Schema.Literal("monthly", "weekly", "daily", "hourly")

/** The spec omits the names of the two dashboard tools, so any non-empty label is accepted. */
export const DashboardType = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must not be empty" }),
  Schema.maxLength(64, { message: () => "must be at most 64 characters" })
)

/** A signed dashboard link (`analytics/dashboards-urls`). */
export const Dashboard = Schema.Struct({
  id: Id,
  name: opt(Schema.String),
  order: opt(Schema.Number),
  /** Signed by the server (HMAC, expiry). */
  url: Url,
  category: opt(DashboardCategory),
  type: DashboardType,
  product: DashboardProduct,
  aggregation_period: AggregationPeriod,
  description: opt(Text),
  illustration_ref: opt(Url)
})
export type Dashboard = typeof Dashboard.Type

const dashboardInputFields = {
  name: opt(Name),
  order: opt(Schema.Number.pipe(Schema.finite({ message: () => "must be a finite number" }))),
  category: opt(DashboardCategory),
  type: DashboardType,
  product: DashboardProduct,
  aggregation_period: AggregationPeriod,
  description: opt(Text),
  illustration_ref: opt(Url),
  /** The unsigned URL that the server signs into `url`. */
  target_url: Url
}

/** An entry of the operator's dashboard catalogue. */
const exampleDashboard = {
  name: "Consent rates",
  order: 1,
  category: "analytics",
  type: "metabase",
  product: "cmp",
  aggregation_period: "daily",
  description: "The share of visitors who accept each purpose",
  target_url: "https://dashboards.acme.example.com/consent-rates"
} as const

export const DashboardCreate = Schema.Struct({
  ...dashboardInputFields,
  /** null or absent: offered to every organization. */
  organization_id: opt(Id)
}).annotations({ examples: [{ ...exampleDashboard, organization_id: null }] })
export const DashboardUpdate = Schema.Struct(dashboardInputFields).annotations({ examples: [exampleDashboard] })

/** A catalogue entry as the operator sees it (`analytics/dashboards`): the unsigned target. */
export const DashboardEntry = Schema.Struct({
  id: Id,
  ...dashboardInputFields,
  organization_id: opt(Id),
  ...Audit
})

// ---------------------------------------------------------------- languages

export const Languages = Schema.Struct({
  /** Locale strings. */
  available: Schema.Array(Schema.String),
  /** Fallback locale. */
  default: Schema.String,
  /** Language → default country, used when a locale gives no country. */
  defaultCountries: Schema.Record({ key: Schema.String, value: Schema.String })
})
export type Languages = typeof Languages.Type
