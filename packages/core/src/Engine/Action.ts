import * as Effect from "effect/Effect"
import type { PremiumFeatureFlag, QuotaField } from "../Domain/Account.js"
import type { DomainError } from "../Domain/Errors.js"
import { checkQuota } from "./Gates.js"
import type { OperationMetric } from "./Metrics.js"
import { UnitOfWork } from "./Ports.js"
import { type EndUserCredential, organizationsOf, type Principal, requireOrganization } from "./Principal.js"
import type { AnyResource } from "./Resource.js"
import type { AnySchema, CoreServices, EndUserRefusals, LookUp } from "./Shape.js"

/**
 * An operation that is not one of a resource's generic methods (a session, a replay, a
 * generator, a TC string), declared once like a resource: from the declaration come its HTTP
 * route, its OpenAPI operation and its function in the host API (`place` and `name`: the
 * action `replayOne` at `webhooks/deliveries` is `cmp.webhooks.deliveries.replayOne`). Its
 * use-case checks what it needs itself (scope, premium feature) and reads the declaration's
 * `premiumFeature` where it has one, so the document and the rule cannot differ.
 */

/** What an action is given, whichever way it is called (an HTTP request, a host's call). */
export interface ActionRequest {
  /** The `:id` of its path; empty when the path has none. */
  readonly id: string
  /** The body, not yet validated: the use-case decodes it with the declared schema. */
  readonly body: unknown
  /** A query (`query: "find"`), not yet validated; the view parameters of a host's call included. */
  readonly query: Readonly<Record<string, unknown>>
  /** Which of the principal's organizations an id is looked up in (`query: "lookUp"`). */
  readonly at: LookUp
  /** The client's address, for slowing down repeated failures of a credential exchange. */
  readonly address?: string | undefined
  /** The credential of an action authenticated by its own header (`credentialHeader`). */
  readonly credential?: string | undefined
}

/** A schema as the OpenAPI document names it in `components/schemas`. */
export interface NamedSchema<S extends AnySchema = AnySchema> {
  readonly name: string
  readonly schema: S
}

/** The stored object an action works on, whose organization a member's request is counted against. */
export interface ActionTarget {
  readonly def: AnyResource
  readonly id: string
}

/** What an action answers, for the OpenAPI document: a named schema, a resource's output, a page of one, or a file. */
export type ActionOutput =
  | { readonly _tag: "Schema"; readonly schema: NamedSchema }
  | { readonly _tag: "Output"; readonly of: AnyResource }
  | { readonly _tag: "Page"; readonly of: AnyResource }
  | { readonly _tag: "File"; readonly mediaTypes: ReadonlyArray<string> }

export const answers = {
  schema: (name: string, schema: AnySchema): ActionOutput => ({ _tag: "Schema", schema: { name, schema } }),
  outputOf: (of: AnyResource): ActionOutput => ({ _tag: "Output", of }),
  pageOf: (of: AnyResource): ActionOutput => ({ _tag: "Page", of }),
  file: (mediaTypes: ReadonlyArray<string>): ActionOutput => ({ _tag: "File", mediaTypes })
}

/**
 * A file an action answers (a proof's bytes, a report's PDF): sent as a download, never shown
 * inline, so a document a visitor uploaded cannot run as a page of the API's origin.
 */
export class FileAnswer {
  readonly _tag = "FileAnswer"
  constructor(readonly bytes: Uint8Array, readonly mediaType: string, readonly filename: string) {}
}

export const isFileAnswer = (u: unknown): u is FileAnswer => u instanceof FileAnswer

/** An extra parameter in the OpenAPI document (a header credential, a query parameter). */
export interface ActionParameter {
  readonly name: string
  readonly in: "query" | "header"
  readonly required: boolean
  readonly description?: string | undefined
}

/** The end users' credentials an action takes besides access tokens, as a resource's `endUsers` opens a method. */
export interface ActionEndUsers {
  readonly credentials: ReadonlyArray<EndUserCredential>
  /** What these credentials are told elsewhere; where several served declarations say it, the first one's. */
  readonly elsewhere?: EndUserRefusals | undefined
}

/**
 * A count quota checked before the use-case runs, as a resource's is on create: the organization
 * the request acts in (the one its body's `organization_id` or its `?organization_id=` names,
 * else the caller's only one) may hold fewer rows of `counts` than its limit. It answers early
 * and reserves nothing: a use-case that writes the counted rows checks again in its transaction
 * where two calls at once must not both pass. A request that names no organization and whose
 * caller acts in several (the operator) is left to the use-case.
 */
export interface ActionQuota {
  readonly name: QuotaField
  /** The rows it limits: the organization's rows of this declaration. */
  readonly counts: Pick<AnyResource, "ownerField" | "tableDef">
}

/** Who an action's use-case acts for: an open action (`auth: "none"`) has no principal, its credential is in its request. */
export type ActionPrincipal<Auth extends "bearer" | "none"> = Auth extends "none" ? undefined : Principal

export interface ActionData<
  Place extends string = string,
  Name extends string = string,
  Path extends string = string,
  In extends AnySchema | undefined = AnySchema | undefined,
  Q extends "find" | "lookUp" | undefined = "find" | "lookUp" | undefined,
  Auth extends "bearer" | "none" = "bearer" | "none"
> {
  /** Where it lives: a service path (`webhooks/deliveries`); its operation is `<place>.<name>`. */
  readonly place: Place
  readonly name: Name
  readonly method: "GET" | "POST"
  /** Its path under `/v1`; `:id` names its one parameter. */
  readonly path: Path
  readonly summary: string
  /** The OpenAPI tag; the place unless given. */
  readonly tag?: string | undefined
  /**
   * `bearer`: an access token is needed and counts against `api_requests`; `none`: a credential
   * exchange, whose body (or `credentialHeader`) is the credential.
   */
  readonly auth: Auth
  /** The header that carries an open action's own credential (`x-platform-authorization`). */
  readonly credentialHeader?: string | undefined
  /** The body's schema; none when the action reads no body. */
  readonly body?: In extends AnySchema ? NamedSchema<In> : undefined
  /** The body may be left out (an empty exchange). */
  readonly bodyOptional?: boolean | undefined
  /**
   * `find`: a find query over `answers`' resource (filters, `$limit`, …); `lookUp`: the query's
   * `organization_id` names which organization an id is looked up in.
   */
  readonly query?: Q
  readonly answers: ActionOutput
  /** 201 for what it makes, 200 otherwise. */
  readonly status: 200 | 201
  /** The error statuses it may answer, when not the usual ones of its kind. */
  readonly errors?: ReadonlyArray<number> | undefined
  readonly parameters?: ReadonlyArray<ActionParameter> | undefined
  /** Its answers show a credential: no cache on the way may keep them. */
  readonly revealsCredentials?: boolean | undefined
  /** Its successful answers may be kept by any cache for this many seconds (`Cache-Control: public, max-age`). */
  readonly cacheSeconds?: number | undefined
  /** The premium feature the organization needs (checked by the use-case, from this declaration). */
  readonly premiumFeature?: PremiumFeatureFlag | undefined
  /** The object it works on: a member of several organizations counts the request there. */
  readonly target?: ((request: Pick<ActionRequest, "id" | "body">) => ActionTarget | undefined) | undefined
  /**
   * Whether `?organization_id=` chooses the organization it acts in (true unless said): an
   * action whose object or body gives the organization ignores the query.
   */
  readonly queryNamesOrganization?: boolean | undefined
  /** Whether a request counts against the organization's `api_requests` quota: it does unless this says `false`. */
  readonly countsApiRequests?: boolean | undefined
  /** What answering it adds to the metrics beyond the request count (a consent token's outcome). */
  readonly metric?: OperationMetric | undefined
  /** The end users' credentials it takes besides access tokens (none unless said); an open action takes its own. */
  readonly endUsers?: (Auth extends "none" ? undefined : ActionEndUsers) | undefined
  /** A count quota the organization it acts in must be under (an open action acts in none). */
  readonly quota?: (Auth extends "none" ? undefined : ActionQuota) | undefined
}

export interface ActionDef<
  Place extends string = string,
  Name extends string = string,
  Path extends string = string,
  In extends AnySchema | undefined = AnySchema | undefined,
  Q extends "find" | "lookUp" | undefined = "find" | "lookUp" | undefined,
  Auth extends "bearer" | "none" = "bearer" | "none",
  Out = unknown,
  R = never
> extends ActionData<Place, Name, Path, In, Q, Auth> {
  /** The use-case, given no principal when the action is open. */
  readonly run: (principal: ActionPrincipal<Auth>, request: ActionRequest) => Effect.Effect<Out, DomainError, R>
  /**
   * An open action whose credential is in its header (`credentialHeader`): the use-case's first
   * half, which checks the credential without the body and answers what the body then goes
   * through (`run` is the two halves together). Over HTTP the body is read only once this
   * succeeded, so a caller without a valid credential never has its body buffered.
   */
  readonly admit?:
    | ((request: Omit<ActionRequest, "body">) => Effect.Effect<(body: unknown) => Effect.Effect<Out, DomainError, R>, DomainError, R>)
    | undefined
}

/** Whether an action's path names a record (`:id`), which is then its first argument. */
export const takesId = (action: Pick<ActionData, "path">): boolean => action.path.includes(":")

/**
 * An action of any kind, whatever it answers and needs: a bearer action or an open one, told
 * apart by `auth`, so a caller hands a principal only to the one that takes it.
 */
export type AnyAction =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  | ActionDef<string, string, string, AnySchema | undefined, "find" | "lookUp" | undefined, "bearer", any, any>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  | ActionDef<string, string, string, AnySchema | undefined, "find" | "lookUp" | undefined, "none", any, any>

/** The organization an action's quota counts in, when the request or its caller says one. */
const quotaOrganization = (principal: Principal, request: ActionRequest): Effect.Effect<string | undefined, DomainError> => {
  const body = request.body
  const named = typeof body === "object" && body !== null && "organization_id" in body && typeof body.organization_id === "string"
    ? body.organization_id
    : request.at.organizationId
  if (named !== undefined) return Effect.as(requireOrganization(principal, named), named)
  const mine = organizationsOf(principal)
  return Effect.succeed(mine !== "all" && mine.length === 1 ? mine[0] : undefined)
}

/** Fails with the resource quota's `QuotaExceeded` when the organization the request acts in is at its limit. */
const requireUnderQuota = (quota: ActionQuota, principal: Principal | undefined, request: ActionRequest) =>
  principal === undefined ? Effect.void : Effect.flatMap(quotaOrganization(principal, request), (organizationId) =>
    organizationId === undefined
      ? Effect.void
      // The quota's lock is held only inside a transaction: the count is read in one of its own.
      : Effect.flatMap(UnitOfWork, (uow) => uow.transaction(checkQuota({ ...quota.counts, quota: quota.name }, organizationId))))

/**
 * Declares an action once; its literal types (place, name, path, body, answer) shape the host
 * API. A declared quota is checked here, in front of the use-case, for every caller.
 */
export const defineAction = <
  const Place extends string,
  const Name extends string,
  const Path extends string,
  Out,
  R,
  In extends AnySchema | undefined = undefined,
  const Q extends "find" | "lookUp" | undefined = undefined,
  const Auth extends "bearer" | "none" = "bearer"
>(declaration: ActionDef<Place, Name, Path, In, Q, Auth, Out, R>): ActionDef<Place, Name, Path, In, Q, Auth, Out, R | CoreServices> => {
  const { quota, run } = declaration
  if (quota === undefined) return declaration
  return { ...declaration, run: (principal, request) => Effect.flatMap(requireUnderQuota(quota, principal, request), () => run(principal, request)) }
}

/** The requirement of an action's use-case. */
export type ActionPorts<A> = A extends ActionDef<any, any, any, any, any, any, any, infer R> ? R : never
