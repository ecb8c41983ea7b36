import * as Layer from "effect/Layer"
import { ApiUsageTable, InvitationsTable, PersonsTable, SettingsTable } from "./InternalTables.js"
import type { TableDef } from "./Ports.js"
import { Relations } from "./Relations.js"
import type { AnyShape, PortsOf, ResourceDef } from "./Resource.js"
import {
  ApiKeysResource,
  MembersResource,
  OrganizationsResource,
  PremiumFeaturesResource,
  QuotasResource,
  SecretsResource
} from "./Resources/Account.js"
import { ConsentEventsResource, ConsentUsersResource } from "./Resources/Consents.js"
import { AttemptsTable, DeliveriesResource, WebhooksResource } from "./Resources/Webhooks.js"
import { SubscribersTable } from "./Webhooks/Subscribers.js"
import { CookiesResource } from "./Resources/Cookies.js"
import { DashboardsResource, DashboardUrlsResource } from "./Resources/Dashboards.js"
import { DomainsResource } from "./Resources/Domains.js"
import { PlatformIntegrationsResource } from "./Resources/PlatformIntegrations.js"
import { PrivacyCentersResource } from "./Resources/PrivacyCenters.js"
import { PropertiesResource } from "./Resources/Properties.js"
import { OrganizationSourceSystemsResource } from "./Resources/SourceSystems.js"
import { SsoConnectionsResource } from "./Resources/SsoConnections.js"
import { VendorsResource } from "./Resources/Vendors.js"
import {
  NoticeConfigsResource,
  NoticeTemplateConfigsResource,
  NoticeTextContentsResource,
  NoticeTextsResource
} from "./Resources/Notices.js"
import { ExportConfigsResource, ExportRunsResource } from "./Resources/Exports.js"

const declared = [
  OrganizationsResource,
  ApiKeysResource,
  QuotasResource,
  PremiumFeaturesResource,
  SecretsResource,
  MembersResource,
  WebhooksResource,
  DeliveriesResource,
  ConsentEventsResource,
  ConsentUsersResource,
  NoticeTextsResource,
  NoticeTextContentsResource,
  NoticeConfigsResource,
  NoticeTemplateConfigsResource,
  ExportConfigsResource,
  ExportRunsResource,
  PropertiesResource,
  DomainsResource,
  CookiesResource,
  VendorsResource,
  PrivacyCentersResource,
  SsoConnectionsResource,
  OrganizationSourceSystemsResource,
  PlatformIntegrationsResource,
  DashboardsResource,
  DashboardUrlsResource
] as const

/** The ports the declared resources need beyond the core services: what a platform must provide. */
export type ResourcePorts = PortsOf<(typeof declared)[number]>

/** A resource of the registry: its hooks need at most the registry's ports. */
export type RegisteredResource = ResourceDef<AnyShape, ResourcePorts, any>

/** Every declared resource with its literal types (its `path`), for APIs derived from the registry. */
export type DeclaredResource = (typeof declared)[number]

/** Every resource served through the generic path, in the order they are documented. */
export const resources: ReadonlyArray<RegisteredResource> = declared

/** Every stored table, once each (some resources share one): what the stores create. */
export const tables: ReadonlyArray<TableDef<any>> = [
  ...new Map(
    [...resources.map((def) => def.tableDef), PersonsTable, InvitationsTable, SettingsTable, AttemptsTable, SubscribersTable, ApiUsageTable]
      .map((t) => [t.table, t] as const)
  ).values()
]

/** The relations of every stored table, for the engine's cascades. */
export const RelationsLive = Layer.succeed(Relations, Relations.of({ tables }))
