import { type InvitationMail, Mailer, StoreUnavailable } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import nodemailer from "nodemailer"

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

/**
 * Mail over SMTP with nodemailer. An invitation is sent while its transaction is open, so a mail
 * server that does not answer within the timeouts fails the invite instead of leaving an
 * invitation nobody received.
 */
export const SmtpMailerLive = (options: SmtpOptions): Layer.Layer<Mailer> =>
  Layer.scoped(
    Mailer,
    Effect.gen(function*() {
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
          Effect.tryPromise(() =>
            transport.sendMail({
              to: mail.to,
              subject: oneLine(`Invitation to ${mail.organizationName}`),
              text: invitationText(mail, options.acceptUrl)
            })
          ).pipe(
            Effect.asVoid,
            Effect.catchAll((error) =>
              // The reason, never the message: it holds the token.
              Effect.logWarning("The mail server did not take an invitation", String((error.error as Error)?.message ?? error)).pipe(
                Effect.zipRight(Effect.die(
                  new StoreUnavailable({ message: "the mail server did not take the invitation", reason: "unreachable" })
                ))
              )
            )
          )
      }
    })
  )
