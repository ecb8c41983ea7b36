import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

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
 * Delivers mail to persons. With one, an invitation reaches only the address invited, so whoever
 * sets the password of a new person has read that address's mail. `None` delivers nothing: the
 * inviter receives the token and hands it on (development, or a host that delivers invitations
 * itself), and can then choose the person's first password.
 */
export class Mailer extends Context.Tag("@cmp/core/Mailer")<
  Mailer,
  {
    /** false: nothing is sent and the invite's answer holds the token. */
    readonly delivers: boolean
    /** Sends the invitation; a mail server that does not take it is a `StoreUnavailable` defect (503). */
    readonly sendInvitation: (mail: InvitationMail) => Effect.Effect<void>
  }
>() {
  static readonly None: Context.Tag.Service<Mailer> = { delivers: false, sendInvitation: () => Effect.void }
  static readonly NoneLayer = Layer.succeed(Mailer, Mailer.None)
}
