import * as Layer from "effect/Layer"
import type { ActionPorts, AnyAction } from "./Action.js"
import { ApiUsageTable, InvitationsTable, PersonsTable, SettingsTable } from "./InternalTables.js"
import { ConsentUserErasuresTable } from "./Consents/UserErasures.js"
import type { TableDef } from "./Ports.js"
import { MailOutboxTable } from "./MailOutbox.js"
import { Relations } from "./Relations.js"
import type { AnyShape, CoreServices, PortsOf, ResourceDef } from "./Resource.js"
import {
  ApiKeysResource,
  MembersResource,
  OrganizationsResource,
  PremiumFeaturesResource,
  QuotasResource,
  SecretsResource
} from "./Resources/Account.js"
import { ConsentEventsResource, ConsentUsersResource } from "./Resources/Consents.js"
import { EventProofsTable, ProofFileAction, ProofFilesTable, ProofsResource } from "./Resources/Proofs.js"
import { ProofReportPdfAction, ProofReportsResource } from "./Resources/ProofReports.js"
import { ReportPdfsTable } from "./Resources/ProofReportRecords.js"
import { ConsentLogHeadsTable, ConsentLogTable } from "./Consents/ConsentLog.js"
import { VerifyLogAction } from "./Consents/LogVerify.js"
import {
  DeliveriesResource,
  DeliveryStatsAction,
  ReplayDeliveryAction,
  ReplayFailedAction,
  WebhooksResource
} from "./Resources/Webhooks.js"
import { AcceptInvitationAction, CreateSessionAction } from "./Sessions.js"
import { CreateConsentTokenAction } from "./Consents/ConsentTokens.js"
import { AttemptsTable, SubscribersTable } from "./Webhooks/Tables.js"
import { CookiesResource } from "./Resources/Cookies.js"
import { DashboardsResource, DashboardUrlsAction, DashboardUrlsResource, LanguagesAction } from "./Resources/Dashboards.js"
import { DomainsResource } from "./Resources/Domains.js"
import { PlatformIntegrationSessionAction, PlatformIntegrationsResource } from "./Resources/PlatformIntegrations.js"
import { PrivacyCentersResource } from "./Resources/PrivacyCenters.js"
import { PropertiesResource } from "./Resources/Properties.js"
import { OrganizationSourceSystemsResource } from "./Resources/SourceSystems.js"
import { SsoConnectionsResource } from "./Resources/SsoConnections.js"
import { VendorsResource } from "./Resources/Vendors.js"
import {
  NoticeConfigsResource,
  NoticeTemplateConfigsResource,
  NoticeTextContentsResource,
  NoticeTextsResource,
  SdkGeneratorAction,
  TcStringAction
} from "./Resources/Notices.js"
import { ExecuteExportAction, ExportConfigsResource, ExportRunsResource } from "./Resources/Exports.js"

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
  ProofsResource,
  ProofReportsResource,
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

/** The operations that are not a resource's generic methods, in the order they are documented. */
const declaredActions = [
  CreateSessionAction,
  AcceptInvitationAction,
  PlatformIntegrationSessionAction,
  ReplayFailedAction,
  ReplayDeliveryAction,
  DeliveryStatsAction,
  SdkGeneratorAction,
  ExecuteExportAction,
  CreateConsentTokenAction,
  ProofFileAction,
  ProofReportPdfAction,
  VerifyLogAction,
  TcStringAction,
  DashboardUrlsAction,
  LanguagesAction
] as const

/** The ports the declared resources and actions need beyond the core services: what a platform must provide. */
export type ResourcePorts = PortsOf<(typeof declared)[number]> | Exclude<ActionPorts<(typeof declaredActions)[number]>, CoreServices>

/** A resource of the registry: its hooks need at most the registry's ports. */
export type RegisteredResource = ResourceDef<AnyShape, ResourcePorts, any>

/** Every declared resource with its literal types (its `path`), for APIs derived from the registry. */
export type DeclaredResource = (typeof declared)[number]

/** Every resource served through the generic path, in the order they are documented. */
export const resources: ReadonlyArray<RegisteredResource> = declared

/** Every declared action with its literal types (place, name, body, answer), for APIs derived from the registry. */
export type DeclaredAction = (typeof declaredActions)[number]

/** Every action, served beside the resources. */
export const actions: ReadonlyArray<AnyAction> = declaredActions

/** Every stored table, once each (some resources share one): what the stores create. */
export const tables: ReadonlyArray<TableDef<any>> = [
  ...new Map(
    [
      ...resources.map((def) => def.tableDef),
      PersonsTable,
      InvitationsTable,
      MailOutboxTable,
      SettingsTable,
      AttemptsTable,
      SubscribersTable,
      ApiUsageTable,
      EventProofsTable,
      ProofFilesTable,
      ReportPdfsTable,
      ConsentLogTable,
      ConsentLogHeadsTable,
      ConsentUserErasuresTable
    ]
      .map((t) => [t.table, t] as const)
  ).values()
]

/** The relations of every stored table, for the engine's cascades. */
export const RelationsLive = Layer.succeed(Relations, Relations.of({ tables }))
