import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { answers, defineAction, FileAnswer } from "../Action.js"
import { ConsentLogStore, headOf, type EntryText, type LogEntry, shardOf, subjectOf } from "../Consents/ConsentLog.js"
import { Digests, ReportPdf } from "../Consents/ProofPorts.js"
import { InvalidInput, TooManyRequests } from "../Domain/Errors.js"
import { ProofReport, ProofReportCreate, type ProofReportDocument } from "../Domain/Proofs.js"
import { OrganizationLimits } from "../OrganizationLimits.js"
import { periodOf } from "../ApiUsage.js"
import { Storage, UnitOfWork } from "../Ports.js"
import type { Principal } from "../Principal.js"
import { eq, gte, inList } from "../Query.js"
import { declareResource, portList, type StoredRow } from "../Resource.js"
import { ensureMethodFor, loadVisible } from "../Service.js"
import { OrganizationsResource } from "./Account.js"
import { ConsentEventsResource, ConsentUsersResource, consentsView, userByOrganizationUserId } from "./Consents.js"
import { NoticeTextContentsResource } from "./Notices.js"
import { ProofsResource } from "./Proofs.js"

/**
 * Proof reports: what an auditor is shown of one person's consent. The user's effective status
 * per regulation and every event behind it, each with the wording it names, its proofs'
 * digests and the log entries that cover it, and the report's own SHA-256 over its canonical
 * JSON. Made once and kept as made; counted against `consent_proof_reports` per calendar month.
 */

const Reports = declareResource({
  name: "proof report",
  path: "consents/proof-reports",
  table: "consent_proof_reports",
  indexes: [{ name: "consent_proof_reports_organization", columns: ["organization_id", "created_at"] }],
  output: ProofReport,
  createInput: ProofReportCreate,
  methods: ["find", "get", "create"],
  ownerField: "organization_id",
  premiumFeature: "versions_and_proofs",
  defaults: { organization_user_id: null, regulation: null }
})

type ReportRow = StoredRow<typeof Reports>

const PAGE = 1000

/** The month's reports are counted under a lock: two at once cannot both take the last one. */
const requireMonthlyAllowance = (organizationId: string) =>
  Effect.gen(function*() {
    yield* Effect.flatMap(UnitOfWork, (uow) => uow.lock(`proof-reports:${organizationId}`))
    const limit = yield* Effect.flatMap(OrganizationLimits, (limits) => limits.quotaOf(organizationId, "consent_proof_reports"))
    if (limit === undefined) return
    const now = yield* Clock.currentTimeMillis
    // The calendar month the `api_requests` quota counts in too: its key is `YYYY-MM`.
    const month = periodOf({ _tag: "CalendarMonth" }, now)
    const used = yield* (yield* Storage).repository(Reports.tableDef).count([
      eq("organization_id", organizationId),
      gte("created_at", `${month.key}-01T00:00:00.000Z`)
    ])
    if (used >= limit) {
      return yield* Effect.fail(new TooManyRequests({
        message: `Quota 'consent_proof_reports' spent: the organization may make ${limit} proof reports a month`,
        retryAfterSeconds: Math.max(1, Math.ceil((month.endsAt - now) / 1000))
      }))
    }
  })

const badUser = (message: string, field: string) => new InvalidInput({ message: `Invalid ${field}: ${message}`, errors: { [field]: message } })

/** Every entry of one chain, and the entries naming each subject in it. */
const entriesBySubject = (organizationId: string, shard: number) =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    const bySubject = new Map<string, Array<LogEntry>>()
    let after: { shard: number; seq: number } | undefined
    for (;;) {
      const page = yield* store.entries(organizationId, { shard, after, limit: PAGE })
      for (const e of page) {
        const text = JSON.parse(e.changes) as EntryText
        for (const c of text.changes) {
          const list = bySubject.get(c.s)
          if (list) list.push(e)
          else bySubject.set(c.s, [e])
        }
      }
      if (page.length < PAGE) break
      after = { shard, seq: page[page.length - 1]!.seq }
    }
    return bySubject
  })

/** The report of one user, as of now. */
const reportOf = (organizationId: string, input: typeof ProofReportCreate.Type) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const digests = yield* Digests
    const sha256 = (s: string) => digests.sha256(s)
    if ((input.user_id === undefined) === (input.organization_user_id === undefined)) {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid body: name the user by exactly one of user_id and organization_user_id",
        errors: { user_id: "give exactly one of user_id and organization_user_id" }
      }))
    }
    const users = storage.repository(ConsentUsersResource.tableDef)
    const found = input.user_id !== undefined
      ? yield* users.get({ organization_id: organizationId, id: input.user_id })
      : yield* userByOrganizationUserId(organizationId, input.organization_user_id!)
    if (Option.isNone(found)) {
      return yield* Effect.fail(input.user_id !== undefined
        ? badUser("names no consent user of this organization", "user_id")
        : badUser("names no consent user of this organization", "organization_user_id"))
    }
    const user = found.value
    const org = yield* storage.repository(OrganizationsResource.tableDef).get(organizationId)
    const events: Array<StoredRow<typeof ConsentEventsResource>> = []
    let position: ReadonlyArray<string> | undefined
    for (;;) {
      const page = yield* storage.repository(ConsentEventsResource.tableDef).find({
        count: false,
        where: [
          eq("organization_id", organizationId),
          eq("user_id", user.id),
          ...(input.regulation !== undefined ? [eq("regulation", input.regulation)] : [])
        ],
        sort: [],
        limit: PAGE,
        skip: 0,
        keyset: { fields: ["created_at", "id"], after: position }
      })
      events.push(...page.data)
      if (page.data.length < PAGE) break
      const end = page.data[page.data.length - 1]!
      position = [end.created_at, end.id]
    }
    // A user's rows are all in one chain: reading it finds every entry that covers them.
    const covering = yield* entriesBySubject(organizationId, shardOf(user.id))
    const entriesOf = (table: string, id: string) =>
      (covering.get(subjectOf(sha256, table, organizationId, id)) ?? []).map((e) => ({
        shard: e.shard,
        seq: e.seq,
        hash: e.hash,
        created_at: e.created_at
      }))
    const contents = storage.repository(NoticeTextContentsResource.tableDef)
    const proofs = storage.repository(ProofsResource.tableDef)
    const proofIds = [...new Set(events.flatMap((e) => e.proofs_id))]
    const proofRows = proofIds.length === 0 ? [] : (yield* proofs.find({
      count: false,
      where: [eq("organization_id", organizationId), inList("id", proofIds)],
      sort: [],
      ordered: false,
      limit: proofIds.length,
      skip: 0
    })).data
    const proofById = new Map(proofRows.map((p) => [p.id, p]))
    const regulations = input.regulation !== undefined
      ? [input.regulation]
      : [...new Set([...Object.keys(user.consent_states), ...events.map((e) => e.regulation)])].sort()
    const sections: Array<ProofReportDocument["regulations"][number]> = []
    for (const regulation of regulations) {
      const list: Array<ProofReportDocument["regulations"][number]["events"][number]> = []
      for (const e of events.filter((e) => e.regulation === regulation)) {
        const content = e.notice_text_content_id === null ? Option.none() : yield* contents.get(e.notice_text_content_id)
        list.push({
          id: e.id,
          created_at: e.created_at,
          updated_at: e.updated_at,
          status: e.status,
          consents: e.consents,
          metadata: e.metadata,
          delegate: e.delegate,
          notice: Option.isSome(content)
            ? { id: content.value.id, text_id: content.value.text_id, content_version: content.value.content_version, content: content.value.content }
            : null,
          proofs: e.proofs_id.map((id) => {
            const p = proofById.get(id)
            return p === undefined
              ? { id, media_type: null, size: null, sha256: null, erased: true }
              : { id, media_type: p.media_type, size: p.size, sha256: p.sha256, erased: false }
          }),
          log: entriesOf("consent_events", e.id)
        })
      }
      const state = Object.hasOwn(user.consent_states, regulation) ? user.consent_states[regulation] : undefined
      sections.push({ regulation, consents: consentsView(state), events: list })
    }
    const report: ProofReportDocument = {
      generated_at: new Date(yield* Clock.currentTimeMillis).toISOString(),
      organization: { id: organizationId, name: Option.match(org, { onNone: () => "", onSome: (o) => o.name }) },
      user: { id: user.id, organization_user_id: user.organization_user_id, created_at: user.created_at },
      regulations: sections,
      log_head: headOf(sha256, yield* Effect.flatMap(ConsentLogStore, (s) => s.heads(organizationId))),
      user_log: entriesOf("consent_users", user.id)
    }
    return { report, user, sha256: sha256(digests.canonicalJson(report)) }
  })

export const ProofReportsResource = Reports.with<ConsentLogStore | Digests>({
  ports: portList(ConsentLogStore, Digests),
  hooks: {
    create: (_p, row, input) =>
      Effect.gen(function*() {
        yield* requireMonthlyAllowance(row.organization_id)
        const made = yield* reportOf(row.organization_id, input)
        return {
          row: {
            ...row,
            user_id: made.user.id,
            organization_user_id: made.user.organization_user_id,
            regulation: input.regulation ?? null,
            sha256: made.sha256,
            report: made.report,
            created_at: made.report.generated_at
          } satisfies ReportRow
        }
      })
  }
})

/** `GET /v1/consents/proof-reports/:id/pdf`: the same report as a PDF. */
export const ProofReportPdfAction = defineAction({
  place: "consents/proof-reports",
  name: "pdf",
  method: "GET",
  path: "consents/proof-reports/:id/pdf",
  summary: "A proof report as a PDF an auditor reads (a download)",
  auth: "bearer",
  query: "lookUp",
  answers: answers.file(["application/pdf"]),
  status: 200,
  premiumFeature: "versions_and_proofs",
  target: (request) => ({ def: ProofReportsResource, id: request.id }),
  run: (principal: Principal, request) =>
    Effect.gen(function*() {
      yield* ensureMethodFor(ProofReportsResource, principal, "get")
      const row = yield* loadVisible(ProofReportsResource, principal, request.id, request.at)
      const pdf = yield* Effect.flatMap(ReportPdf, (r) => r.render({ id: row.id, sha256: row.sha256, created_at: row.created_at, report: row.report }))
      return new FileAnswer(pdf, "application/pdf", `proof-report-${row.id}.pdf`)
    })
})
