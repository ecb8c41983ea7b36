import accounts from "./0001_accounts.js"
import invitations from "./0002_invitations.js"
import consentsWebhooks from "./0003_consents_webhooks.js"
import organizationResources from "./0004_organization_resources.js"
import noticesExports from "./0005_notices_exports.js"
import organizationScopedIds from "./0006_organization_scoped_ids.js"
import consentUserStates from "./0007_consent_user_states.js"
import subscribers from "./0008_subscribers.js"
import organizationCreators from "./0009_organization_creators.js"
import webhooksQuota from "./0010_webhooks_quota.js"
import consentUsersUpdated from "./0011_consent_users_updated.js"
import consentCollection from "./0012_consent_collection.js"
import proofOfConsent from "./0013_proof_of_consent.js"
import traceContext from "./0014_trace_context.js"
import consentLogAppend from "./0015_consent_log_append.js"
import proofReportPdfs from "./0016_proof_report_pdfs.js"
import mailOutbox from "./0017_mail_outbox.js"
import consentTokenRevocation from "./0018_consent_token_revocation.js"
import rowCounts from "./0019_row_counts.js"
import consentLogVerifyRuns from "./0020_consent_log_verify_runs.js"
import consentReceipts from "./0021_consent_receipts.js"
import consentPolicies from "./0022_consent_policies.js"
import consentGpc from "./0023_consent_gpc.js"
import consentStateFilter from "./0024_consent_state_filter.js"
import provenDomains from "./0026_proven_domains.js"
import credentialRotation from "./0027_credential_rotation.js"
import webhookSecretRotation from "./0028_webhook_secret_rotation.js"
import retention from "./0029_retention.js"
import auditLogs from "./0030_audit_logs.js"
import latestErasure from "./0031_latest_erasure.js"
import leaseIndex from "./0032_lease_index.js"
import outboxPartialIndexes from "./0033_outbox_partial_indexes.js"

/**
 * Versioned migrations of both stores: a new change is a new entry, never an edit of an old
 * one. The keys are the ids and names the Migrator records, so they never change either.
 */
export const migrations = {
  "0001_accounts": accounts,
  "0002_invitations": invitations,
  "0003_consents_webhooks": consentsWebhooks,
  "0004_organization_resources": organizationResources,
  "0005_notices_exports": noticesExports,
  "0006_organization_scoped_ids": organizationScopedIds,
  "0007_consent_user_states": consentUserStates,
  "0008_subscribers": subscribers,
  "0009_organization_creators": organizationCreators,
  "0010_webhooks_quota": webhooksQuota,
  "0011_consent_users_updated": consentUsersUpdated,
  "0012_consent_collection": consentCollection,
  "0013_proof_of_consent": proofOfConsent,
  "0014_trace_context": traceContext,
  "0015_consent_log_append": consentLogAppend,
  "0016_proof_report_pdfs": proofReportPdfs,
  "0017_mail_outbox": mailOutbox,
  "0018_consent_token_revocation": consentTokenRevocation,
  "0019_row_counts": rowCounts,
  "0020_consent_log_verify_runs": consentLogVerifyRuns,
  "0021_consent_receipts": consentReceipts,
  "0022_consent_policies": consentPolicies,
  "0023_consent_gpc": consentGpc,
  "0024_consent_state_filter": consentStateFilter,
  "0026_proven_domains": provenDomains,
  "0027_credential_rotation": credentialRotation,
  "0028_webhook_secret_rotation": webhookSecretRotation,
  "0029_retention": retention,
  "0030_audit_logs": auditLogs,
  "0031_latest_erasure": latestErasure,
  "0032_lease_index": leaseIndex,
  "0033_outbox_partial_indexes": outboxPartialIndexes
}
