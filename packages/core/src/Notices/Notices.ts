import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { answers, defineAction } from "../Engine/Action.js"
import { recordChange } from "../Engine/AuditTrail.js"
import { Conflict, InvalidInput } from "../Domain/Errors.js"
import type { EventConsents } from "../Domain/Consent.js"
import {
  NoticeConfig,
  NoticeConfigCreate,
  NoticeConfigUpdate,
  NoticeTemplateConfig,
  NoticeTemplateConfigCreate,
  NoticeTemplateConfigUpdate,
  NoticeText,
  NoticeTextContent,
  NoticeTextContentCreate,
  NoticeTextContentReview,
  NoticeTextContentUpdate,
  NoticeTextCreate,
  NoticeTextUpdate,
  SdkConfiguration,
  SdkConfigurationInput,
  type TemplateConfigBody
} from "../Domain/Notice.js"
import { buildSdkConfig, completeTemplateApp, sdkInputErrors, templateAppErrors, type ApprovedText } from "./Rules.js"
import { Storage, UnitOfWork } from "../Engine/Ports.js"
import { isOperator, type Principal, requireOrganization } from "../Engine/Principal.js"
import { eq } from "../Engine/Query.js"
import { declareResource, defineResource, portList, type StoredRow } from "../Engine/Resource.js"
import { NoticeVersions } from "./NoticeVersions.js"
import { decode } from "../Engine/Bodies.js"
import { loadVisible } from "../Engine/Reads.js"

/**
 * Notices: texts and their reviewed contents, notice configs, template configs (IAB TCF rules
 * enforced), the SDK configuration generator, and the TCF choices a TC string encodes.
 */

const invalid = (errors: Record<string, string>) => {
  const [k, m] = Object.entries(errors)[0]!
  return new InvalidInput({ message: `Invalid ${k}: ${m}`, errors })
}
const failOn = (errors: Record<string, string>) =>
  Object.keys(errors).length > 0 ? Effect.fail(invalid(errors)) : Effect.void

// ---------------------------------------------------------------- texts

/**
 * At most one default text per organization and platform: making a text the default clears
 * `default` on every other default text of the organization sharing one of its platforms, in
 * the same transaction, serialised on `notice-default:<org>`.
 */
const clearOtherDefaults = (principal: Principal, row: StoredRow<typeof Texts>) =>
  Effect.gen(function*() {
    if (row.default !== true) return
    const org = row.organization_id
    yield* Effect.flatMap(UnitOfWork, (u) => u.lock(`notice-default:${org}`))
    const repo = (yield* Storage).repository(Texts.tableDef)
    const platforms = new Set<string>(row.platforms)
    for (let skip = 0;; skip += 500) {
      const page = yield* repo.find({
        count: false,
        where: [eq("organization_id", org), eq("default", true)],
        sort: [],
        limit: 500,
        skip
      })
      for (const other of page.data) {
        if (other.id === row.id) continue
        if (!other.platforms.some((p) => platforms.has(p))) continue
        const cleared = yield* repo.patch(other.id, { default: false, updated_at: row.updated_at }, other.version)
        yield* recordChange(Texts, principal, "patch", cleared, ["default"])
      }
      if (page.data.length < 500) break
    }
  })

const Texts = declareResource({
  name: "notice text",
  path: "widgets/notices/texts",
  table: "notice_texts",
  indexes: [{ name: "notice_texts_organization", columns: ["organization_id", "created_at"] }],
  output: NoticeText,
  createInput: NoticeTextCreate,
  updateInput: NoticeTextUpdate,
  methods: ["find", "get", "create", "update", "patch"],
  ownerField: "organization_id",
  defaults: { platforms: [], default: false }
})

export const NoticeTextsResource = Texts.with({
  hooks: {
    create: (p, row) => Effect.as(clearOtherDefaults(p, row), { row }),
    update: (p, _before, after) => Effect.as(clearOtherDefaults(p, after), after)
  }
})

// ---------------------------------------------------------------- contents

const approvedImmutable = (row: { readonly id: string }) =>
  new Conflict({
    message: `Notice text content '${row.id}' is approved and cannot be changed: it is the proof of what users saw`,
    errors: { status: "is approved" }
  })

const Contents = declareResource({
  name: "notice text content",
  path: "widgets/notices/texts-contents",
  table: "notice_text_contents",
  indexes: [
    { name: "notice_text_contents_organization", columns: ["organization_id", "created_at"] },
    { name: "notice_text_contents_text", columns: ["text_id", "status", "content_version"] }
  ],
  output: NoticeTextContent,
  createInput: NoticeTextContentCreate,
  updateInput: NoticeTextContentUpdate,
  operatorInput: NoticeTextContentReview,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  unique: [["text_id", "content_version"]],
  defaults: { includes_purposes: false, status: "submitted" }
})

export const NoticeTextContentsResource = Contents.with<NoticeVersions>({
  ports: portList(NoticeVersions),
  hooks: {
    // A content approved through this process counts at once for re-collection.
    afterCommit: (output) => Effect.flatMap(NoticeVersions, (kept) => kept.forgetText(output.text_id)),
    create: (principal, row) =>
      Effect.gen(function*() {
        const text = yield* Effect.mapError(
          loadVisible(NoticeTextsResource, principal, row.text_id),
          () => invalid({ text_id: "is not a notice text of this organization" })
        )
        if (text.organization_id !== row.organization_id) {
          return yield* Effect.fail(invalid({ text_id: "is not a notice text of this organization" }))
        }
        // content_version = max + 1, serialised per text.
        yield* Effect.flatMap(UnitOfWork, (u) => u.lock(`notice-content:${text.id}`))
        const last = yield* (yield* Storage).repository(Contents.tableDef).find({
          count: false,
          where: [eq("text_id", text.id)],
          sort: [{ field: "content_version", direction: -1 }],
          limit: 1,
          skip: 0
        })
        const max = last.data[0]?.content_version ?? 0
        return { row: { ...row, status: "submitted" as const, content_version: max + 1 } }
      }),
    update: (principal, before, after) =>
      Effect.gen(function*() {
        if (before.status === "approved") return yield* Effect.fail(approvedImmutable(before))
        // A client's change of the text is a new submission; only the operator sets the status.
        if (!isOperator(principal) && after.content !== before.content) return { ...after, status: "submitted" as const }
        return after
      }),
    // Every content is kept forever: it is the proof of what users saw.
    remove: (_p, row) =>
      Effect.fail(
        row.status === "approved"
          ? approvedImmutable(row)
          : new Conflict({
            message: "Notice text contents are never removed: every content is kept as the proof of what users saw",
            errors: { id: "cannot be removed" }
          })
      )
  }
})

// ---------------------------------------------------------------- configs

export const NoticeConfigsResource = defineResource({
  name: "notice config",
  path: "widgets/notices/configs",
  table: "notice_configs",
  indexes: [{ name: "notice_configs_organization", columns: ["organization_id", "created_at"] }],
  output: NoticeConfig,
  createInput: NoticeConfigCreate,
  updateInput: NoticeConfigUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  hooks: {
    create: (_p, row) => Effect.as(failOn(sdkInputErrors(row.config, "config.")), { row }),
    update: (_p, _b, after) => Effect.as(failOn(sdkInputErrors(after.config, "config.")), after)
  }
})


const completeConfig = (config: TemplateConfigBody) => ({ ...config, app: completeTemplateApp(config.app) })

export const NoticeTemplateConfigsResource = defineResource({
  name: "notice template config",
  path: "widgets/notices/templates/configs",
  table: "notice_template_configs",
  indexes: [{ name: "notice_template_configs_organization", columns: ["organization_id", "created_at"] }],
  output: NoticeTemplateConfig,
  createInput: NoticeTemplateConfigCreate,
  updateInput: NoticeTemplateConfigUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  hooks: {
    create: (_p, row) => {
      const config = completeConfig(row.config)
      return Effect.as(failOn(templateAppErrors(config.app)), { row: { ...row, config } })
    },
    update: (_p, _b, after) => {
      const config = completeConfig(after.config)
      return Effect.as(failOn(templateAppErrors(config.app)), { ...after, config })
    }
  }
})

// ---------------------------------------------------------------- the SDK configuration generator

/** The newest approved content of a text the principal may see, in the given organization. */
const approvedText = (principal: Principal, organizationId: string, textId: string) =>
  Effect.gen(function*() {
    const noText = invalid({ text_id: "must name a notice text of the organization that has an approved content" })
    const text = yield* Effect.mapError(loadVisible(NoticeTextsResource, principal, textId), () => noText)
    if (text.organization_id !== organizationId) return yield* Effect.fail(noText)
    const page = yield* (yield* Storage).repository(Contents.tableDef).find({
      count: false,
      where: [eq("text_id", textId), eq("status", "approved")],
      sort: [{ field: "content_version", direction: -1 }],
      limit: 1,
      skip: 0
    })
    const c = page.data[0]
    if (!c) return yield* Effect.fail(noText)
    return {
      text_id: textId,
      content_id: c.id,
      content_version: c.content_version,
      content: c.content,
      includes_purposes: c.includes_purposes === true
    } satisfies ApprovedText
  })

/** `POST widgets/notices/generators/sdk`: validates the input and answers `{ config }`. */
export const generateSdkConfig = (principal: Principal, body: unknown) =>
  Effect.gen(function*() {
    const decoded = decode(SdkConfigurationInput, body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const input = decoded.right
    yield* requireOrganization(principal, input.organization_id)
    yield* failOn(sdkInputErrors(input))
    const text = input.text_mode === "approved"
      ? yield* approvedText(principal, input.organization_id, input.text_id!)
      : undefined
    return buildSdkConfig(input, text)
  })

// ---------------------------------------------------------------- TC string

export interface TcChoices {
  readonly purposeConsents: ReadonlyArray<number>
  readonly purposeLegitimateInterests: ReadonlyArray<number>
  readonly vendorConsents: ReadonlyArray<number>
  readonly vendorLegitimateInterests: ReadonlyArray<number>
  /** When the choices were made (ISO). */
  readonly created: string
}

/** Encodes IAB TCF v2 TC strings; implemented outside core (`@iabtechlabtcf/core`). */
export class TcStringEncoder extends Context.Tag("@cmp/core/TcStringEncoder")<
  TcStringEncoder,
  { readonly encode: (choices: TcChoices) => Effect.Effect<string, InvalidInput> }
>() {}

const numeric = (ids: ReadonlyArray<string> | undefined, max: number) =>
  (ids ?? []).filter((s) => /^\d{1,6}$/.test(s)).map(Number).filter((n) => n >= 1 && n <= max)

/** The TCF choices of an event: numeric purpose ids 1–11 and numeric vendor ids; others are not TCF. */
export const tcChoicesOf = (event: { readonly consents: EventConsents; readonly created_at: string }): TcChoices => {
  const c = event.consents
  const purposes = c.purposes ?? []
  const pid = (p: { id: string }) => numeric([p.id], 11)[0]
  return {
    purposeConsents: purposes.filter((p) => p.enabled).map(pid).filter((n): n is number => n !== undefined),
    purposeLegitimateInterests: purposes.filter((p) => p.enabled_li === true).map(pid).filter((n): n is number =>
      n !== undefined
    ),
    vendorConsents: numeric(c.vendors?.enabled, 65535),
    vendorLegitimateInterests: numeric(c.vendors?.enabled_li, 65535),
    created: event.created_at
  }
}

// ---------------------------------------------------------------- declarations

export const SdkGeneratorAction = defineAction({
  place: "widgets/notices/generators/sdk",
  name: "create",
  method: "POST",
  path: "widgets/notices/generators/sdk",
  summary: "Build the configuration of a client SDK from the SDK configuration input (custom_json merged last)",
  auth: "bearer",
  body: { name: "SdkConfigurationInput", schema: SdkConfigurationInput },
  answers: answers.schema("SdkConfiguration", SdkConfiguration),
  status: 201,
  queryNamesOrganization: false,
  run: (principal, request) => generateSdkConfig(principal, request.body)
})
