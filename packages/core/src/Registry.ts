import * as Layer from "effect/Layer"
import type { ActionPorts, AnyAction } from "./Engine/Action.js"
import { ApiUsageTable, InvitationsTable, PersonsTable, SettingsTable } from "./Accounts/InternalTables.js"
import { ConsentUserErasuresTable } from "./Consents/UserErasures.js"
import type { TableDef } from "./Engine/Ports.js"
import { MailOutboxTable } from "./Accounts/MailOutbox.js"
import { RetentionMarksTable } from "./Consents/ConsentRetention.js"
import { Relations } from "./Engine/Relations.js"
import type { AnyShape, CoreServices } from "./Engine/Shape.js"
import type { PortsOf, ResourceDef } from "./Engine/Resource.js"
import { ApiKeysResource } from "./Accounts/ApiKeys.js"
import { RotateKeySecretAction, RotatePublicKeyAction } from "./Accounts/CredentialRotation.js"
import { MembersResource } from "./Accounts/Members.js"
import { OrganizationsResource } from "./Accounts/Organizations.js"
import { PremiumFeaturesResource, QuotasResource } from "./Accounts/Plans.js"
import { SecretsResource } from "./Accounts/Secrets.js"
import { ConsentEventsResource } from "./Consents/Events.js"
import { ConsentUsersResource } from "./Consents/Users.js"
import { ConsentPoliciesResource } from "./Consents/Policies.js"
import { UserStatesTable } from "./Consents/UserStateRows.js"
import { EventProofsTable, ProofFileAction, ProofFilesTable, ProofsResource } from "./Consents/Proofs.js"
import { ProofReportPdfAction, ProofReportsResource } from "./Consents/ProofReports.js"
import { ReportPdfsTable } from "./Consents/ProofReportRecords.js"
import { ConsentLogHeadsTable, ConsentLogTable } from "./Consents/ConsentLog.js"
import { VerifyLogAction } from "./Consents/LogVerify.js"
import { ConsentReceiptAction, ReceiptJwksAction } from "./Consents/Receipts.js"
import {
  DeliveriesResource,
  DeliveryStatsAction,
  ReplayDeliveryAction,
  ReplayFailedAction,
  WebhooksResource
} from "./Webhooks/Webhooks.js"
import { RotateSigningSecretAction } from "./Webhooks/SecretRotation.js"
import { AcceptInvitationAction, CreateSessionAction } from "./Sessions/Sessions.js"
import { CreateConsentTokenAction } from "./Consents/ConsentTokens.js"
import { AttemptsTable, SubscribersTable } from "./Webhooks/Tables.js"
import { CookiesResource } from "./Properties/Cookies.js"
import { DashboardsResource, DashboardUrlsAction, DashboardUrlsResource, LanguagesAction } from "./Analytics/Dashboards.js"
import { DomainsResource } from "./Properties/Domains.js"
import { PlatformIntegrationSessionAction, PlatformIntegrationsResource } from "./Accounts/PlatformIntegrations.js"
import { PrivacyCentersResource } from "./Properties/PrivacyCenters.js"
import { PropertiesResource } from "./Properties/Properties.js"
import { OrganizationSourceSystemsResource } from "./Accounts/SourceSystems.js"
import { SsoConnectionsResource } from "./Accounts/SsoConnections.js"
import { VendorsResource } from "./Properties/Vendors.js"
import {
  NoticeConfigsResource,
  NoticeTemplateConfigsResource,
  NoticeTextContentsResource,
  NoticeTextsResource,
  SdkGeneratorAction
} from "./Notices/Notices.js"
import { TcStringAction } from "./Consents/TcStrings.js"
import { ExecuteExportAction, ExportConfigsResource, ExportRunsResource } from "./Exports/Exports.js"
import { AuditLogsResource } from "./Operations/AuditLogs.js"

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
  ConsentPoliciesResource,
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
  DashboardUrlsResource,
  AuditLogsResource
] as const

/** The operations that are not a resource's generic methods, in the order they are documented. */
const declaredActions = [
  CreateSessionAction,
  AcceptInvitationAction,
  PlatformIntegrationSessionAction,
  RotateKeySecretAction,
  RotatePublicKeyAction,
  RotateSigningSecretAction,
  ReplayFailedAction,
  ReplayDeliveryAction,
  DeliveryStatsAction,
  SdkGeneratorAction,
  ExecuteExportAction,
  CreateConsentTokenAction,
  ProofFileAction,
  ProofReportPdfAction,
  VerifyLogAction,
  ConsentReceiptAction,
  ReceiptJwksAction,
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
      ConsentUserErasuresTable,
      UserStatesTable,
      RetentionMarksTable
    ]
      .map((t) => [t.table, t] as const)
  ).values()
]

/** The relations of every stored table, for the engine's cascades. */
export const RelationsLive = Layer.succeed(Relations, Relations.of({ tables }))
