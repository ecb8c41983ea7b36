import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import type { InvitationMail } from "./Mailer.js"
import { Storage } from "../Engine/Ports.js"
import { sortableId } from "../Engine/Random.js"
import { defineTable, field } from "../Engine/Tables.js"
import { ownedByOrganization } from "../Engine/Resource.js"
import { type RowOf } from "../Engine/Shape.js"
import { SecretBox } from "../Engine/Secrets.js"

/**
 * The mail outbox: an invitation's mail is written in the invite's transaction and sent after
 * the commit by the mail dispatcher (`MailDispatcher`), so no transaction waits for a mail
 * server. The mail (address, name, token) is sealed at rest and dropped once the mail is sent
 * or given up; what stays is ids, status, attempts and times.
 */

/** `pending` (due at `next_attempt_at`), `sending` (leased), `sent`, or `failed` (given up). */
export type MailStatus = "pending" | "sending" | "sent" | "failed"

const mailFields = {
  id: field.string,
  organization_id: field.string,
  invitation_id: field.string,
  status: field.string,
  attempts_count: field.number,
  next_attempt_at: field.optionalTimestamp,
  /** The `InvitationMail` as JSON, sealed by `SecretBox`; null once sent or given up. */
  mail_sealed: field.optionalString,
  /** Why the last attempt failed: a kind and an SMTP code, never the server's text. */
  last_error: field.optionalString,
  lease_until: field.optionalTimestamp,
  leased_by: field.optionalString,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
} as const

export const MailOutboxTable = defineTable("mail_outbox", mailFields, {
  indexes: [
    { name: "mail_outbox_due", columns: ["status", "next_attempt_at"] },
    // The retention purge finds finished mails by when they finished.
    { name: "mail_outbox_finished", columns: ["status", "updated_at"] }
  ],
  references: [ownedByOrganization]
})

export type MailRecord = RowOf<typeof mailFields>

/** Where a mail goes after an attempt. */
export interface MailOutcome {
  readonly status: "sent" | "pending" | "failed"
  readonly attempts_count: number
  readonly next_attempt_at: string | null
  readonly last_error: string | null
}

/** The store's side of the mail outbox: leases due mails to a dispatcher and records how each attempt ended. */
export class MailQueue extends Context.Tag("@cmp/core/MailQueue")<
  MailQueue,
  {
    /**
     * Claims up to `limit` due mails: pending ones whose `next_attempt_at` has come, and sending
     * ones whose lease expired (their worker died). They become `sending`, leased to `workerId`
     * until `leaseUntil`. Concurrent claimers never get the same mail.
     */
    readonly claim: (options: {
      readonly now: string
      readonly leaseUntil: string
      readonly workerId: string
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<MailRecord>>
    /**
     * Moves the mail to the outcome if it is still leased to `workerId`, dropping its sealed
     * body when the outcome is final (`sent`, `failed`); answers whether it did.
     */
    readonly complete: (options: {
      readonly id: string
      readonly workerId: string
      readonly outcome: MailOutcome
      readonly now: string
    }) => Effect.Effect<boolean>
    /** When the earliest mail `claim` would take is due, so an idle dispatcher knows how long to sleep. */
    readonly nextDueAt: Effect.Effect<Option.Option<string>>
    /**
     * Deletes up to `limit` finished mails (`sent`, or `failed`: given up) finished (`updated_at`)
     * before `before`, in one statement; answers how many went. Pending and sending mails stay.
     */
    readonly purgeDone: (options: { readonly before: string; readonly limit: number }) => Effect.Effect<number>
  }
>() {}

/** Wakes an in-process mail dispatcher after an invitation's mail was committed. */
export class MailSignal extends Context.Tag("@cmp/core/MailSignal")<MailSignal, { readonly notify: Effect.Effect<void> }>() {
  /** No mail dispatcher in this process: another process polls the outbox (or nothing is mailed). */
  static readonly None = Layer.succeed(MailSignal, { notify: Effect.void })
}

export const signalMail: Effect.Effect<void, never, MailSignal> = Effect.flatMap(MailSignal, (s) => s.notify)

/** Writes the invitation's mail to the outbox, sealed, in the caller's transaction. */
export const enqueueInvitationMail = (organizationId: string, invitationId: string, mail: InvitationMail) =>
  Effect.gen(function*() {
    const now = yield* nowIso
    const sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(JSON.stringify(mail)))
    yield* Effect.orDie((yield* Storage).repository(MailOutboxTable).create({
      id: `mail_${sortableId(Date.parse(now))}`,
      organization_id: organizationId,
      invitation_id: invitationId,
      status: "pending",
      attempts_count: 0,
      next_attempt_at: now,
      mail_sealed: sealed,
      last_error: null,
      lease_until: null,
      leased_by: null,
      created_at: now,
      updated_at: now,
      version: 1
    }))
  })
