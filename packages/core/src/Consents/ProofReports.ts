import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { answers, defineAction, FileAnswer } from "../Engine/Action.js"
import { ConsentLogStore, headOf, type EntryText, type LogEntry, type LogHead, shardOf, subjectOf } from "./ConsentLog.js"
import { Digests, ReportPdf } from "./ProofPorts.js"
import { Conflict, InvalidInput, NotFound, TooManyRequests } from "../Domain/Errors.js"
import { ProofReportCreate, type ProofReportDocument } from "../Domain/Proofs.js"
import { OrganizationLimits } from "../Engine/OrganizationLimits.js"
import { periodOf } from "../Accounts/ApiUsage.js"
import { Storage, UnitOfWork } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { eq, gte } from "../Engine/Query.js"
import { portList, type StoredRow } from "../Engine/Resource.js"
import { ensureMethodFor } from "../Engine/Bodies.js"
import { loadVisible } from "../Engine/Reads.js"
import { OrganizationsResource } from "../Accounts/Organizations.js"
import { ConsentEventsResource } from "./Events.js"
import { ConsentUsersResource } from "./Users.js"
import { consentsView } from "./UserStates.js"
import { userByOrganizationUserId } from "./EndUsers.js"
import { NoticeTextContentsResource } from "../Notices/Notices.js"
import { proofsNamed } from "./Proofs.js"
import { keepPdf, keptPdf, madeReport, Reports, type ReportRow } from "./ProofReportRecords.js"

/**
 * Proof reports: what an auditor is shown of one person's consent. The user's effective status
 * per regulation and every event behind it, each with the wording it names, its proofs'
 * digests and the log entries that cover it, and the report's own SHA-256 over its canonical
 * JSON. Made once and kept as made, with the PDF it was rendered as; counted against
 * `consent_proof_reports` per calendar month.
 */

const PAGE = 1000

/** The month's reports are counted under a lock: two at once cannot both take the last one. */
const requireMonthlyAllowance = (organizationId: string) =>
  Effect.zipRight(Effect.flatMap(UnitOfWork, (uow) => uow.lock(`proof-reports:${organizationId}`)), monthlyAllowance(organizationId))

/** Fails when the month's reports are spent (read without the lock, it answers early: a report costs reading and rendering). */
const monthlyAllowance = (organizationId: string) =>
  Effect.gen(function*() {
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

/** Every entry of one chain up to `last` (none past it: the head the report carries), and the entries naming each subject in it. */
const entriesBySubject = (organizationId: string, shard: number, last: number) =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    const bySubject = new Map<string, Array<LogEntry>>()
    let after: { shard: number; seq: number } | undefined
    while (last > 0) {
      const page = yield* store.entries(organizationId, { shard, after, limit: PAGE })
      for (const e of page) {
        if (e.seq > last) return bySubject
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

/**
 * Whether a chain, past `last`, changed one of `subjects` or removed any row (a removed event is
 * one the report may have missed): then what was read does not all belong to the head read.
 */
const movedSince = (organizationId: string, shard: number, last: number, subjects: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    let after = { shard, seq: last }
    for (;;) {
      const page = yield* store.entries(organizationId, { shard, after, limit: PAGE })
      for (const e of page) {
        if (e.shard !== shard) return false
        if ((JSON.parse(e.changes) as EntryText).changes.some((c) => c.a === "remove" || subjects.has(c.s))) return true
      }
      if (page.length < PAGE) return false
      after = { shard, seq: page[page.length - 1]!.seq }
    }
  })

/** The report of one user, as of the log's `heads`, read before it. */
const reportOf = (organizationId: string, input: typeof ProofReportCreate.Type, heads: ReadonlyArray<LogHead>) =>
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
    const shard = shardOf(user.id)
    const last = heads.find((h) => h.shard === shard)?.seq ?? 0
    const covering = yield* entriesBySubject(organizationId, shard, last)
    // The rows the report shows, by the subject the log names them by.
    const subjects = new Set<string>()
    const entriesOf = (table: string, id: string) => {
      const subject = subjectOf(sha256, table, organizationId, id)
      subjects.add(subject)
      return (covering.get(subject) ?? []).map((e) => ({
        shard: e.shard,
        seq: e.seq,
        hash: e.hash,
        created_at: e.created_at
      }))
    }
    const contents = storage.repository(NoticeTextContentsResource.tableDef)
    const proofIds = [...new Set(events.flatMap((e) => e.proofs_id))]
    for (const id of proofIds) subjects.add(subjectOf(sha256, "consent_proofs", organizationId, id))
    const proofRows = yield* proofsNamed(organizationId, proofIds)
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
      log_head: headOf(sha256, heads),
      user_log: entriesOf("consent_users", user.id)
    }
    return { report, user, sha256: sha256(digests.canonicalJson(report)), shard, last, subjects }
  })

/** Reads of a user changed under them are read again this many times, then refused. */
const ATTEMPTS = 3

/**
 * The report of one user, read outside any transaction: the log's heads first, then the user's
 * rows and its chain up to that head. If the chain moved past it on a row the report shows (or
 * removed one), the rows read may be newer than the head: read again. So a report shows the
 * user as the log head it carries covers it.
 */
const consistentReport = (organizationId: string, input: typeof ProofReportCreate.Type) =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    for (let attempt = 1;; attempt++) {
      const made = yield* reportOf(organizationId, input, yield* store.heads(organizationId))
      if (!(yield* movedSince(organizationId, made.shard, made.last, made.subjects))) return made
      if (attempt === ATTEMPTS) {
        return yield* Effect.fail(new Conflict({
          message: "The user's consent changed while its report was made: try again",
          errors: { user_id: "changed while the report was made" }
        }))
      }
    }
  })

/** A report as its PDF, and that PDF's digest. */
const renderPdf = (row: Pick<ReportRow, "id" | "sha256" | "created_at">, report: ProofReportDocument) =>
  Effect.gen(function*() {
    const pdf = yield* Effect.flatMap(ReportPdf, (r) => r.render({ id: row.id, sha256: row.sha256, created_at: row.created_at, report }))
    return { pdf, pdf_sha256: (yield* Digests).sha256(pdf) }
  })

/**
 * A report is read and rendered before its transaction, holding no lock (it reads a sixteenth of
 * the organization's log); the transaction only counts the month's reports and writes it.
 */
export const ProofReportsResource = Reports.with<ConsentLogStore | Digests | ReportPdf, Uint8Array>({
  ports: portList(ConsentLogStore, Digests, ReportPdf),
  hooks: {
    prepare: (_p, row, input) =>
      Effect.gen(function*() {
        yield* monthlyAllowance(row.organization_id)
        const made = yield* consistentReport(row.organization_id, input)
        const completed = {
          ...row,
          user_id: made.user.id,
          organization_user_id: made.user.organization_user_id,
          regulation: input.regulation ?? null,
          sha256: made.sha256,
          report: made.report,
          created_at: made.report.generated_at
        } satisfies ReportRow
        const { pdf, pdf_sha256 } = yield* renderPdf(completed, made.report)
        return { row: { ...completed, pdf_sha256 }, carry: pdf }
      }),
    create: (_p, row) => Effect.as(requireMonthlyAllowance(row.organization_id), { row }),
    afterCreate: (_p, stored, pdf) => pdf === undefined ? Effect.dieMessage("a proof report without its PDF") : Effect.orDie(keepPdf(stored, pdf))
  }
})

/**
 * The PDF of a report made before PDFs were kept: rendered from the report as it was made, and
 * kept with its digest. Of two first reads at once, one keeps it and both answer those bytes.
 */
const backfillPdf = (row: ReportRow, report: ProofReportDocument) =>
  Effect.gen(function*() {
    const { pdf, pdf_sha256 } = yield* renderPdf(row, report)
    const uow = yield* UnitOfWork
    const kept = yield* uow.transaction(Effect.gen(function*() {
      const current = yield* (yield* Storage).repository(Reports.tableDef).get(row.id)
      if (Option.isNone(current) || Option.isNone(madeReport(current.value))) return Option.none<Uint8Array>()
      const already = yield* keptPdf(current.value)
      if (Option.isSome(already)) return already
      yield* Effect.orDie(keepPdf(current.value, pdf))
      yield* Effect.orDie((yield* Storage).repository(Reports.tableDef).patch(row.id, { pdf_sha256 }, current.value.version))
      return Option.some(pdf)
    }))
    return kept
  })

/** `GET /v1/consents/proof-reports/:id/pdf`: the report as the PDF rendered when it was made. */
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
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  target: (request) => ({ def: ProofReportsResource, id: request.id }),
  run: (principal: Principal, request) =>
    Effect.gen(function*() {
      yield* ensureMethodFor(ProofReportsResource, principal, "get")
      const row = yield* loadVisible(ProofReportsResource, principal, request.id, request.at)
      const gone = new NotFound({ message: `The PDF of proof report '${row.id}' was removed when its user was erased` })
      const report = madeReport(row)
      if (Option.isNone(report)) return yield* Effect.fail(gone)
      const kept = yield* keptPdf(row)
      const pdf = Option.isSome(kept) ? kept : yield* backfillPdf(row, report.value)
      if (Option.isNone(pdf)) return yield* Effect.fail(gone)
      return new FileAnswer(pdf.value, "application/pdf", `proof-report-${row.id}.pdf`)
    })
})
