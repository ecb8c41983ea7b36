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
  ConsentUsersResource
]
