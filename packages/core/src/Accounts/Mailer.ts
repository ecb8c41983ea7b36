import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** An invitation on its way to the person invited: only that address ever learns the token. */
export interface InvitationMail {
  readonly to: string
  readonly name: string
  readonly organizationName: string
  /** What `POST /v1/invitations/accept` takes, with the password the person chooses. */
  readonly token: string
  readonly expiresAt: string
}

/**
 * A mail the mail server did not take. It says why in terms safe for a log line: the kind of
 * failure and the SMTP reply code, never the server's text (a refusal quotes the recipient).
 */
export class MailNotSent extends Schema.TaggedError<MailNotSent>()("MailNotSent", {
  /** `unreachable` (no connection, no greeting), `refused` (a 4xx/5xx reply), `timeout`, `error`. */
  kind: Schema.Literal("unreachable", "refused", "timeout", "error"),
  /** The SMTP reply code when the server answered one. */
  code: Schema.optional(Schema.Number)
}) {}

/**
 * Delivers mail to persons. With one, an invitation reaches only the address invited, so whoever
 * sets the password of a new person has read that address's mail. `None` delivers nothing: the
 * inviter receives the token and hands it on (development, or a host that delivers invitations
 * itself), and can then choose the person's first password.
 *
 * Invitations are not sent while the invite's transaction is open: the invite writes them to the
 * mail outbox (`MailOutbox`), and the mail dispatcher calls `sendInvitation` after the commit.
 */
export class Mailer extends Context.Tag("@cmp/core/Mailer")<
  Mailer,
  {
    /** false: nothing is sent and the invite's answer holds the token. */
    readonly delivers: boolean
    /** Sends the invitation; fails when the mail server does not take it (it is retried). */
    readonly sendInvitation: (mail: InvitationMail) => Effect.Effect<void, MailNotSent>
  }
>() {
  static readonly None: Context.Tag.Service<Mailer> = { delivers: false, sendInvitation: () => Effect.void }
  static readonly NoneLayer = Layer.succeed(Mailer, Mailer.None)
}
