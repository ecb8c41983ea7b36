import { type InvitationMail, Mailer, MailNotSent } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export interface SmtpOptions {
  /** `smtp://user:password@host:587` (STARTTLS when offered) or `smtps://…:465` (`SMTP_URL`). */
  readonly url: string
  /** The sender of every mail, such as `Consent <no-reply@example.com>` (`MAIL_FROM`). */
  readonly from: string
  /**
   * The page where an invited person chooses a password (`INVITATION_URL`): the mail links to it
   * with `#token=<token>`, a fragment, so the token reaches neither that host's logs nor a referrer.
   */
  readonly acceptUrl?: string | undefined
}

/** Header values come from clients (a person's or an organization's name): one line each. */
const oneLine = (s: string) => s.replace(/[\r\n]+/g, " ")

const invitationText = (mail: InvitationMail, acceptUrl: string | undefined) =>
  [
    `Hello ${mail.name},`,
    "",
    `You are invited to join ${mail.organizationName}.`,
    ...(acceptUrl === undefined ? [] : [
      "Choose your password here to accept:",
      "",
      `${acceptUrl}#token=${encodeURIComponent(mail.token)}`,
      ""
    ]),
    `${acceptUrl === undefined ? "To accept" : "Or"}, choose a password and send it with this invitation token to POST /v1/invitations/accept`,
    "as { \"token\": \"<token>\", \"password\": \"<password>\" }:",
    "",
    mail.token,
    "",
    `The invitation expires at ${mail.expiresAt}. If you did not expect it, ignore this mail:`,
    "nobody else has received the token."
  ].join("\n")

/** nodemailer's codes of a server that could not be reached or did not greet. */
const UNREACHABLE = new Set(["ECONNECTION", "ESOCKET", "EDNS", "ECONNREFUSED", "ECONNRESET"])

/**
 * Why the server did not take the mail, as a kind and a reply code only: the server's reply text
 * (`550 5.1.1 <ada@example.com>: unknown user`) quotes the recipient, so it is never kept or logged.
 */
const notSent = (error: unknown): MailNotSent => {
  const e = (typeof error === "object" && error !== null ? error : {}) as { code?: unknown; responseCode?: unknown }
  if (typeof e.responseCode === "number") return new MailNotSent({ kind: "refused", code: e.responseCode })
  if (e.code === "ETIMEDOUT") return new MailNotSent({ kind: "timeout" })
  return new MailNotSent({ kind: typeof e.code === "string" && UNREACHABLE.has(e.code) ? "unreachable" : "error" })
}

/**
 * Mail over SMTP with nodemailer. The mail dispatcher calls it after the invite's commit, so the
 * timeouts bound one attempt of a retried mail, not a request. nodemailer is imported only where
 * a mail server is configured: a server without one never holds its code.
 */
export const SmtpMailerLive = (options: SmtpOptions): Layer.Layer<Mailer> =>
  Layer.scoped(
    Mailer,
    Effect.gen(function*() {
      const { default: nodemailer } = yield* Effect.promise(() => import("nodemailer"))
      const transport = yield* Effect.acquireRelease(
        Effect.sync(() =>
          nodemailer.createTransport(
            { url: options.url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 },
            { from: options.from }
          )
        ),
        (t) => Effect.sync(() => t.close())
      )
      return {
        delivers: true,
        sendInvitation: (mail: InvitationMail) =>
          Effect.tryPromise({
            try: () =>
              transport.sendMail({
                to: mail.to,
                subject: oneLine(`Invitation to ${mail.organizationName}`),
                text: invitationText(mail, options.acceptUrl)
              }),
            catch: notSent
          }).pipe(Effect.asVoid)
      }
    })
  )
