import type { ResourceDef } from "./Resource.js"
import {
  ApiKeysResource,
  MembersResource,
  OrganizationsResource,
  PremiumFeaturesResource,
  QuotasResource,
  SecretsResource
} from "./Resources/Account.js"
import { ConsentEventsResource, ConsentUsersResource } from "./Resources/Consents.js"
import { DeliveriesResource, WebhooksResource } from "./Resources/Webhooks.js"
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

/** Every resource served through the generic path, in the order they are documented. */
export const resources: ReadonlyArray<ResourceDef> = [
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
]
