import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Audit, exampleIds, Id, opt, PositiveInt, Timestamp } from "../Domain/Common.js"
import { Regulation } from "../Domain/Consent.js"
import { InvalidInput } from "../Domain/Errors.js"
import { Storage } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { declareResource, portList, type StoredRow } from "../Engine/Resource.js"
import { NoticeTextContentsResource, NoticeTextsResource } from "../Notices/Notices.js"
import { DURATION_UNITS } from "./Durations.js"
import { NoticeVersions } from "../Notices/NoticeVersions.js"
import { ConsentPolicies } from "./PolicyCache.js"
import { withService } from "../Engine/Services.js"

/**
 * Consent policies: how long an organization's consents last for one regulation, when they
 * must be asked again, and which purposes a browser's Global Privacy Control signal refuses.
 * One per organization and regulation. The state they give users is `PolicyState.ts`.
 */

export const DurationUnit = Schema.Literal(...DURATION_UNITS)

const PurposeIds = Schema.Array(Id).pipe(Schema.maxItems(1000, { message: () => "must list at most 1000 purposes" }))

/** The fields a policy's output, create and update share as they are. */
const policyFields = {
  /** How long a consent lasts from the last merged event. */
  consent_duration: PositiveInt,
  consent_duration_unit: DurationUnit,
  /** How long a refusal lasts, when not `consent_duration` (both or neither). */
  denied_consent_duration: opt(PositiveInt),
  denied_consent_duration_unit: opt(DurationUnit),
  /** Choices recorded before this instant must be asked again. */
  recollect_before: opt(Timestamp),
  /** The notice text whose newer approved contents call for asking again. */
  notice_text_id: opt(Id)
}

export const ConsentPolicy = Schema.Struct({
  id: Id,
  organization_id: Id,
  regulation: Regulation,
  ...policyFields,
  recollect_on_new_content: Schema.Boolean,
  /** Purposes a browser's Global Privacy Control signal records as refused. */
  gpc_purpose_ids: PurposeIds,
  /** Purposes whose consent alone does not make a user's state `given`. */
  essential_purpose_ids: PurposeIds,
  ...Audit
})
export type ConsentPolicy = typeof ConsentPolicy.Type

const examplePolicy = {
  consent_duration: 13,
  consent_duration_unit: "months",
  denied_consent_duration: 6,
  denied_consent_duration_unit: "months",
  recollect_on_new_content: true,
  gpc_purpose_ids: ["advertising"],
  essential_purpose_ids: ["essential"]
} as const

export const ConsentPolicyCreate = Schema.Struct({
  organization_id: Id,
  /** Default `gdpr`. */
  regulation: Schema.optional(Regulation),
  ...policyFields,
  recollect_on_new_content: Schema.optional(Schema.Boolean),
  gpc_purpose_ids: Schema.optional(PurposeIds),
  essential_purpose_ids: Schema.optional(PurposeIds)
}).annotations({ examples: [{ organization_id: exampleIds.organization, regulation: "gdpr", ...examplePolicy }] })

export const ConsentPolicyUpdate = Schema.Struct({
  regulation: Regulation,
  ...policyFields,
  recollect_on_new_content: Schema.Boolean,
  gpc_purpose_ids: PurposeIds,
  essential_purpose_ids: PurposeIds
}).annotations({ examples: [{ regulation: "gdpr", ...examplePolicy }] })

const Policies = declareResource({
  name: "consent policy",
  path: "consents/policies",
  table: "consent_policies",
  indexes: [{ name: "consent_policies_organization", columns: ["organization_id", "created_at"] }],
  output: ConsentPolicy,
  createInput: ConsentPolicyCreate,
  updateInput: ConsentPolicyUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  premiumFeature: "consents_api",
  unique: [["organization_id", "regulation"]],
  references: [{ field: "notice_text_id", table: "notice_texts", onDelete: "set-null" }],
  defaults: {
    regulation: "gdpr",
    denied_consent_duration: null,
    denied_consent_duration_unit: null,
    recollect_before: null,
    notice_text_id: null,
    recollect_on_new_content: false,
    gpc_purpose_ids: [],
    essential_purpose_ids: []
  }
})

export type PolicyRow = StoredRow<typeof Policies>

const invalid = (field: string, message: string) => new InvalidInput({ message: `Invalid ${field}: ${message}`, errors: { [field]: message } })

/** The rules across fields, and the notice text an organization's own. */
const checked = (row: PolicyRow) =>
  Effect.gen(function*() {
    if ((row.denied_consent_duration == null) !== (row.denied_consent_duration_unit == null)) {
      const missing = row.denied_consent_duration == null ? "denied_consent_duration" : "denied_consent_duration_unit"
      return yield* Effect.fail(invalid(missing, "is required with its pair (a denied duration takes its unit)"))
    }
    if (row.notice_text_id != null) {
      const text = yield* Effect.flatMap(Storage, (s) => s.repository(NoticeTextsResource.tableDef).get(row.notice_text_id!))
      if (Option.isNone(text) || text.value.organization_id !== row.organization_id) {
        return yield* Effect.fail(invalid("notice_text_id", "must name a notice text of the organization"))
      }
    }
    return row
  })

const forgetPolicies = (organizationId: string) => Effect.flatMap(ConsentPolicies, (c) => c.forget(organizationId))

export const ConsentPoliciesResource = Policies.with<ConsentPolicies>({
  ports: portList(ConsentPolicies),
  hooks: {
    create: (_p, row) => Effect.map(checked(row), (r) => ({ row: r })),
    update: (_p, _before, after) => checked(after),
    afterCommit: (output) => forgetPolicies(output.organization_id)
  }
})

/** Every policy of an organization, kept a moment (`ConsentPolicies`). */
export const policiesOf = (organizationId: string) =>
  withService(ConsentPolicies, (cache) =>
    cache.read<PolicyRow, never, Storage>(organizationId, Effect.flatMap(Storage, (s) =>
      Effect.map(s.repository(Policies.tableDef).find({
        count: false,
        where: [eq("organization_id", organizationId)],
        sort: [],
        ordered: false,
        // One per regulation: a handful.
        limit: 1000,
        skip: 0
      }), (page) => page.data))))

/** The organization's policy for a regulation, if any. */
export const policyFor = (organizationId: string, regulation: string) =>
  Effect.map(policiesOf(organizationId), (all) => all.find((p) => p.regulation === regulation))

/** The highest `content_version` of an approved content of a notice text, kept a moment. */
export const latestApprovedVersion = (textId: string) =>
  Effect.flatMap(NoticeVersions, (kept) =>
    kept.latest(textId, Effect.flatMap(Storage, (s) =>
      Effect.map(s.repository(NoticeTextContentsResource.tableDef).find({
        count: false,
        where: [eq("text_id", textId), eq("status", "approved")],
        sort: [{ field: "content_version", direction: -1 }],
        limit: 1,
        skip: 0
      }), (page) => page.data[0]?.content_version))))

/** The notice text and version of a content, kept a moment. */
export const contentVersionOf = (contentId: string) =>
  Effect.flatMap(NoticeVersions, (kept) =>
    kept.content(contentId, Effect.flatMap(Storage, (s) =>
      Effect.map(s.repository(NoticeTextContentsResource.tableDef).get(contentId), Option.match({
        onNone: () => undefined,
        onSome: (c) => ({ text_id: c.text_id, content_version: c.content_version })
      })))))
