import * as Effect from "effect/Effect"
import { Forbidden, NotFound } from "../Domain/Errors.js"

/**
 * Who is calling. Built once per request from a verified token; every use-case takes it
 * and enforces organization scope itself.
 */
export type Principal =
  /** An internal key of the operator organization: may act in every organization. */
  | { readonly _tag: "Operator"; readonly keyId: string; readonly organizationId: string; readonly via?: Via }
  /** A key of one organization (an internal one is managed by the operator but stays scoped). */
  | { readonly _tag: "Client"; readonly keyId: string; readonly organizationId: string; readonly via?: Via }
  /** A person with an email session, acting in the organizations it is a member of. */
  | {
    readonly _tag: "Member"
    readonly personId: string
    readonly organizationIds: ReadonlyArray<string>
  }
  /**
   * A visitor's browser or app holding the organization's public key: it only records consent
   * events (for guests, and for users the organization vouches for).
   */
  | { readonly _tag: "PublicKey"; readonly organizationId: string }
  /** One end user of one organization, through a consent token: its own user and events only. */
  | {
    readonly _tag: "ConsentToken"
    readonly tokenId: string
    readonly organizationId: string
    readonly organizationUserId: string
    readonly metadata?: Readonly<Record<string, unknown>> | undefined
    readonly delegate?: Readonly<Record<string, unknown>> | undefined
  }

/**
 * What stands behind an operator's or a client's `keyId` when it is not an API key: a platform
 * integration, or the host's own calls in its process. Consent tokens name it as their issuer.
 */
export type Via = "integration" | "in-process"

/** The credentials an end user's device holds, which reach only what a declaration opens to them. */
export type EndUserPrincipal = Extract<Principal, { readonly _tag: "PublicKey" | "ConsentToken" }>

/** How a declaration names them. */
export type EndUserCredential = "public-key" | "consent-token"

export const endUserCredentialOf = (p: Principal): EndUserCredential | undefined =>
  p._tag === "PublicKey" ? "public-key" : p._tag === "ConsentToken" ? "consent-token" : undefined

export const isEndUser = (p: Principal): p is EndUserPrincipal => p._tag === "PublicKey" || p._tag === "ConsentToken"

export const isOperator = (p: Principal): boolean => p._tag === "Operator"

/** The organizations a principal may act in; `"all"` for the operator. */
export const organizationsOf = (p: Principal): ReadonlyArray<string> | "all" => {
  switch (p._tag) {
    case "Operator":
      return "all"
    case "Client":
      return [p.organizationId]
    case "Member":
      return p.organizationIds
    case "PublicKey":
    case "ConsentToken":
      return [p.organizationId]
  }
}

export const canAccess = (p: Principal, organizationId: unknown): boolean => {
  const orgs = organizationsOf(p)
  return orgs === "all" || (typeof organizationId === "string" && orgs.includes(organizationId))
}

export const requireOperator = (p: Principal, what: string): Effect.Effect<void, Forbidden> =>
  isOperator(p) ? Effect.void : Effect.fail(new Forbidden({ message: `Only the operator may ${what}` }))

/** Writing into an organization the caller does not belong to is refused openly. */
export const requireOrganization = (p: Principal, organizationId: unknown): Effect.Effect<void, Forbidden> =>
  canAccess(p, organizationId)
    ? Effect.void
    : Effect.fail(new Forbidden({ message: "You are not allowed to act in this organization" }))

/** Reading another organization's object answers as if it did not exist. */
export const notFound = (resource: string, id: string) =>
  new NotFound({ message: `No ${resource} found for id '${id}'` })
