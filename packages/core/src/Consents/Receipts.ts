import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { OrganizationsResource } from "../Accounts/Organizations.js"
import { type ConsentState, Regulation } from "../Domain/Consent.js"
import { InvalidInput, NotFound } from "../Domain/Errors.js"
import { answers, defineAction } from "../Engine/Action.js"
import { ensureMethodFor } from "../Engine/Bodies.js"
import { nowIso } from "../Engine/Clock.js"
import { nextId, Storage } from "../Engine/Ports.js"
import { canAccess, type Principal } from "../Engine/Principal.js"
import { eq, inList } from "../Engine/Query.js"
import { findWithin, loadVisible } from "../Engine/Reads.js"
import { requireFeature } from "../Engine/Gates.js"
import type { LookUp } from "../Engine/Shape.js"
import { NoticeTextContentsResource } from "../Notices/Notices.js"
import { betweenPages, ConsentLogStore, headOf } from "./ConsentLog.js"
import { stateContext, stateIn } from "./UserConsentState.js"
import { DEFAULT_REGULATION, Events, type EventRow, Users, type UserRow } from "./ConsentTables.js"
import { Digests } from "./ProofPorts.js"
import { proofsNamed } from "./Proofs.js"
import { eventStates, MAX_RECEIPT_EVENTS, receiptWalk } from "./ReceiptEvents.js"
import {
  type ConsentReceipt,
  RECEIPT_SCHEMA,
  ReceiptAnswer,
  type ReceiptEvent,
  ReceiptJwks,
  ReceiptSigner
} from "./ReceiptSchema.js"
import { ConsentUsersResource } from "./Users.js"
import { consentsView } from "./UserStates.js"

/**
 * Consent receipts: what the store holds of one person's consent for one regulation, signed by
 * the platform's key so the person, or a regulator, can check it offline against the published
 * keys. Made on request, never kept; a receipt reads a bounded number of rows (`ReceiptEvents.ts`).
 */

const PAGE = 100


/** A UUID (RFC 9562 version 8) from SHA-256: the same for one user and regulation, whoever asks. */
const recordIdOf = (sha256: (s: string) => string, organizationId: string, userId: string, regulation: string) => {
  const h = sha256(`consent-receipt-record\n${organizationId}\n${userId}\n${regulation}`)
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`
}

const badQuery = (field: string, why: string) => new InvalidInput({ message: `Invalid query: ${field} ${why}`, errors: { [field]: why } })

const QUERY_NAMES = new Set(["organization_id", "regulation", "$by_organization_user_id"])

/** The regulation asked for and whether the id is the organization's own user id. */
const readQuery = (query: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    for (const name of Object.keys(query)) if (!QUERY_NAMES.has(name)) return yield* Effect.fail(badQuery(name, "is not a parameter of a receipt"))
    const by = query.$by_organization_user_id
    if (by !== undefined && by !== "true" && by !== "false" && by !== true && by !== false) {
      return yield* Effect.fail(badQuery("$by_organization_user_id", "must be true or false"))
    }
    const regulation = query.regulation ?? DEFAULT_REGULATION
    if (typeof regulation !== "string" || !Schema.is(Regulation)(regulation)) {
      return yield* Effect.fail(badQuery("regulation", "must be a lower-case regulation code such as gdpr"))
    }
    return { regulation, byOrganizationUserId: by === "true" || by === true }
  })

/** The user a receipt is about, as `GET consents/users/:id` finds it for this principal. */
const userFor = (principal: Principal, id: string, byOrganizationUserId: boolean, at: LookUp) =>
  Effect.gen(function*() {
    yield* ensureMethodFor(ConsentUsersResource, principal, "get")
    if (!byOrganizationUserId) return yield* loadVisible(ConsentUsersResource, principal, id, at)
    const row = principal._tag === "ConsentToken" && principal.organizationUserId !== id
      ? Option.none<UserRow>()
      : yield* findWithin(Users, principal, "organization_user_id", id, at)
    if (Option.isNone(row) || !canAccess(principal, row.value.organization_id)) {
      return yield* Effect.fail(new NotFound({ message: `No consent user found for organization user id '${id}'` }))
    }
    yield* requireFeature(ConsentUsersResource, principal, row.value.organization_id)
    return row.value
  })

/**
 * The events a receipt lists, newest first as read: back to the oldest that still explains the
 * state, at most `MAX_RECEIPT_EVENTS`; `complete` when none older was left out.
 */
const listedEvents = (user: UserRow, regulation: string, state: ConsentState | undefined) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Events.tableDef)
    const walk = receiptWalk(state)
    const read: Array<EventRow> = []
    const seen = new Set<string>()
    for (let skip = 0;; skip += PAGE) {
      // One row past the page says whether older events remain.
      const page = yield* repo.find({
        count: false,
        where: [eq("organization_id", user.organization_id), eq("user_id", user.id), eq("regulation", regulation), eq("status", "confirmed")],
        sort: [{ field: "created_at", direction: -1 }, { field: "id", direction: -1 }],
        limit: PAGE + 1,
        skip
      })
      const rows = page.data.slice(0, PAGE)
      for (let i = 0; i < rows.length; i++) {
        const e = rows[i]!
        // An event written between two pages shifts the next one: skip what was already read.
        if (seen.has(e.id)) continue
        seen.add(e.id)
        read.push(e)
        const enough = walk.add(e)
        if (enough || read.length >= MAX_RECEIPT_EVENTS) {
          return { events: read, complete: i === rows.length - 1 && page.data.length <= PAGE }
        }
      }
      if (page.data.length <= PAGE) return { events: read, complete: true }
      yield* betweenPages
    }
  })

/** The receipt of one user for one regulation, as the store holds it now. */
const receiptOf = (user: UserRow, regulation: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const digests = yield* Digests
    const sha256 = (s: string) => digests.sha256(s)
    const organizationId = user.organization_id
    // Read after the user and before its events: it covers the state as read; an event written
    // in between is listed though the head does not cover it yet (a later head does).
    const logHead = headOf(sha256, yield* Effect.flatMap(ConsentLogStore, (store) => store.heads(organizationId)))
    const state = Object.hasOwn(user.consent_states, regulation) ? user.consent_states[regulation] : undefined
    const { complete, events } = yield* listedEvents(user, regulation, state)
    const oldestFirst = [...events].reverse()
    const contentIds = [...new Set(oldestFirst.flatMap((e) => (e.notice_text_content_id === null ? [] : [e.notice_text_content_id])))]
    const contents = contentIds.length === 0 ? [] : (yield* storage.repository(NoticeTextContentsResource.tableDef).find({
      count: false,
      where: [inList("id", contentIds)],
      sort: [],
      ordered: false,
      limit: contentIds.length,
      skip: 0
    })).data
    const noticeSha = new Map(contents.filter((c) => c.organization_id === organizationId).map((c) => [c.id, sha256(c.content)]))
    const proofs = yield* proofsNamed(organizationId, [...new Set(oldestFirst.flatMap((e) => e.proofs_id))])
    const proofSha = new Map(proofs.map((p) => [p.id, p.sha256]))
    const states = eventStates(oldestFirst)
    const listed = oldestFirst.map((e, i): ReceiptEvent => {
      const method = e.expression_method === "public_key" || e.expression_method === "consent_token" ? e.expression_method : "api"
      const notice = e.notice_text_content_id === null ? undefined : noticeSha.get(e.notice_text_content_id)
      return {
        event_id: e.id,
        event_time: e.created_at,
        state: states[i]!,
        expression_method: method,
        expressed_by: e.delegate !== null ? "delegate" : method === "api" ? "controller" : "data_subject",
        gpc: e.gpc,
        ...(e.notice_text_content_id !== null ? { notice_text_content_id: e.notice_text_content_id } : {}),
        ...(notice !== undefined ? { notice_sha256: notice } : {}),
        // An erased proof has no digest left to show.
        proofs_sha256: e.proofs_id.flatMap((id) => {
          const sha = proofSha.get(id)
          return sha === undefined ? [] : [sha]
        })
      }
    })
    const organization = yield* storage.repository(OrganizationsResource.tableDef).get(organizationId)
    const org = Option.getOrUndefined(organization)
    const processing: Array<ConsentReceipt["processing"][number]> = []
    for (const p of state?.purposes ?? []) {
      processing.push({ purpose_id: p.id, legal_basis: "consent", state: p.enabled ? "given" : "refused" })
      if (p.enabled_li !== undefined) {
        processing.push({ purpose_id: p.id, legal_basis: "legitimate_interest", state: p.enabled_li ? "given" : "refused" })
      }
    }
    const receipt: ConsentReceipt = {
      schema_version: RECEIPT_SCHEMA,
      receipt_id: yield* nextId,
      record_id: recordIdOf(sha256, organizationId, user.id, regulation),
      created_at: yield* nowIso,
      pii_principal_id: user.id,
      ...(user.organization_user_id !== null ? { organization_user_id: user.organization_user_id } : {}),
      controller: {
        id: organizationId,
        name: org?.name ?? "",
        ...(org?.website != null ? { url: org.website } : {})
      },
      jurisdiction: regulation,
      ...stateIn(yield* stateContext(organizationId, regulation, [state]), state),
      processing,
      vendors: consentsView(state).vendors,
      events: listed,
      events_complete: complete,
      log_head: logHead
    }
    const jws = yield* Effect.flatMap(ReceiptSigner, (signer) => signer.sign(receipt))
    return { receipt, jws }
  })

/** `GET /v1/consents/users/:id/receipt`: a signed receipt of the user's consent for one regulation. */
export const ConsentReceiptAction = defineAction({
  place: "consents/users",
  name: "receipt",
  method: "GET",
  path: "consents/users/:id/receipt",
  summary: "A signed consent receipt (ISO/IEC TS 27560) of the user for one regulation: its state, " +
    "each purpose, its vendors and the events behind them, as JSON and as a compact JWS (EdDSA)",
  auth: "bearer",
  query: "lookUp",
  answers: answers.schema("ConsentReceiptAnswer", ReceiptAnswer),
  status: 200,
  premiumFeature: "consents_api",
  parameters: [
    { name: "regulation", in: "query", required: false, description: "The regulation the receipt is about (default `gdpr`)" },
    {
      name: "$by_organization_user_id",
      in: "query",
      required: false,
      description: "`true`: the id in the path is the organization's own id of the user (`organization_user_id`)"
    },
    { name: "organization_id", in: "query", required: false, description: "The organization the user is looked up in" }
  ],
  // A person reads their own receipt with a consent token.
  endUsers: { credentials: ["consent-token"] },
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  run: (principal, request) =>
    Effect.gen(function*() {
      const { byOrganizationUserId, regulation } = yield* readQuery(request.query)
      const user = yield* userFor(principal, request.id, byOrganizationUserId, request.at)
      return yield* receiptOf(user, regulation)
    })
})

/** `GET /v1/consents/receipts/jwks`: the keys receipts are signed with, for anyone to verify one offline. */
export const ReceiptJwksAction = defineAction({
  place: "consents/receipts",
  name: "jwks",
  method: "GET",
  path: "consents/receipts/jwks",
  summary: "The public keys consent receipts are signed with (a JWK Set), retired keys included: no authentication",
  auth: "none",
  answers: answers.schema("ReceiptJwks", ReceiptJwks),
  status: 200,
  // Keys change only by rotation, which keeps the old ones published: a copy a minute old verifies every receipt but the newest key's.
  cacheSeconds: 60,
  countsApiRequests: false,
  run: () => Effect.map(Effect.flatMap(ReceiptSigner, (signer) => signer.publicKeys), (keys) => ({ keys: [...keys] }))
})
