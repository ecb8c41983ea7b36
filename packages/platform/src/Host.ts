import {
  Declarations,
  type DeclarationsShape,
  type DomainError,
  type Method,
  operationsOf,
  type Principal,
  ResourceService,
  type ServedAction,
  type ServedResource,
  Settings,
  takesId
} from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Actor } from "./Actor.js"
import { hostKeys } from "./Served.js"
import { fromCause } from "./HostErrors.js"
import type { ConsentPlatformApi, OrganizationClient, PlatformEffects, Promised, Scoped } from "./HostTypes.js"
import type { PlatformOptions } from "./Options.js"
import { layer, type PlatformServices } from "./Platform.js"
import { operatingMethods } from "./Operating.js"
import { subscriberMethods } from "./Subscribe.js"

/**
 * The host API built at run time: one object made once, with a function per operation of every
 * declared resource and action, as Promises and as Effects. Each call acts as a principal the
 * host names (`asOrganization(id)`, `asOperator()`); it goes through the same use-cases as an
 * HTTP request (scope, validation, premium features, count quotas, webhooks), but it is not an
 * API request: `api_requests` does not count it. Its types are `HostTypes.ts`'s.
 */

/** The key id a host's calls carry where a change names who made it. */
export const HOST_KEY_ID = "in-process"

// ---------------------------------------------------------------- a call's options

/** A call's options as the tree reads them: whatever a plain-JavaScript caller passed, kept where it has the right type. */
interface Given {
  readonly as?: Actor | undefined
  readonly organizationId?: string | undefined
  readonly view?: Readonly<Record<string, unknown>> | undefined
  readonly clientAddress?: string | undefined
  readonly credential?: string | undefined
}

const stringOr = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const recordOf = (u: unknown): Readonly<Record<string, unknown>> => (isRecord(u) ? u : {})

const givenOf = (u: unknown): Given => {
  const o = recordOf(u)
  return {
    as: o.as instanceof Actor ? o.as : undefined,
    organizationId: stringOr(o.organizationId),
    view: isRecord(o.view) ? o.view : undefined,
    clientAddress: stringOr(o.clientAddress),
    credential: stringOr(o.credential)
  }
}

/** How a call's options are completed before it runs (a scoped client's get its `as`). */
type Bind = (given: Given) => Given

/** Who a call acts as: a host that leaves out `as` is told at once, as a type error would have. */
const principalOf = (o: Given): Principal => {
  if (o.as === undefined) throw new TypeError("The call acts as someone: pass { as: cmp.asOrganization(id) } or { as: cmp.asOperator() }")
  return o.as.principal
}

const lookUp = (o: Given): ResourceService.LookUp => ({ organizationId: o.organizationId, query: o.view })

// ---------------------------------------------------------------- operations

/** An operation of the tree, as Effect: the arguments its type names, read at run time. */
type Operation = (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, DomainError>

/** Runs a use-case with the platform's services (the runtime's, built once). */
type Provide = <A>(effect: Effect.Effect<A, DomainError, PlatformServices>) => Effect.Effect<A, DomainError>

/** The generic operations of a resource; the options are each operation's last argument. */
const resourceOperations = (def: ServedResource, provide: Provide, bind: Bind): Readonly<Record<Method, Operation>> => ({
  // The engine pages by cursor when `$cursor` is given, and keeps what `$select` names.
  find: (query, options) => {
    const o = bind(givenOf(options))
    return provide(ResourceService.findAsRequested(def, principalOf(o), { ...o.view, ...recordOf(query) }))
  },
  get: (id, options) => {
    const o = bind(givenOf(options))
    return provide(ResourceService.get(def, principalOf(o), String(id), lookUp(o)))
  },
  create: (input, options) => {
    const o = bind(givenOf(options))
    return provide(ResourceService.create(def, principalOf(o), input, { query: o.view }))
  },
  update: (id, input, options) => {
    const o = bind(givenOf(options))
    return provide(ResourceService.update(def, principalOf(o), String(id), input, lookUp(o)))
  },
  patch: (id, input, options) => {
    const o = bind(givenOf(options))
    return provide(ResourceService.patch(def, principalOf(o), String(id), input, lookUp(o)))
  },
  remove: (id, options) => {
    const o = bind(givenOf(options))
    return provide(ResourceService.remove(def, principalOf(o), String(id), lookUp(o)))
  }
})

/** An action's arguments are its path's id, its body, its query, then the options: those it declares. */
const actionOperation = (a: ServedAction, provide: Provide, bind: Bind): Operation => (...args) => {
  let i = 0
  const id = takesId(a) ? String(args[i++]) : ""
  const body = a.body !== undefined ? args[i++] : undefined
  const query = a.query === "find" ? recordOf(args[i++]) : {}
  const given = givenOf(args[i])
  const o = bind(given)
  const request = { id, body, query: { ...o.view, ...query }, at: lookUp(o), address: given.clientAddress, credential: given.credential }
  // An open action acts for no one: its use-case reads its credential from the body or the options.
  return provide(a.auth === "none" ? a.run(undefined, request) : a.run(principalOf(o), request))
}

// ---------------------------------------------------------------- the tree

/** Nested keys down to the operations: the tree's shape at run time. */
interface Tree<Leaf> {
  [key: string]: Tree<Leaf> | Leaf
}

/** The node at `keys`, made on the way when missing (no operation is named like a node: the declarations are checked). */
const nodeAt = (tree: Tree<Operation>, keys: ReadonlyArray<string>): Tree<Operation> => {
  let node = tree
  for (const key of keys) {
    const next = node[key]
    node = next === undefined || typeof next === "function" ? (node[key] = {}) : next
  }
  return node
}

/** Every served resource's operations and every action, each at the keys its path or place names. */
const operationsTree = (declarations: DeclarationsShape, provide: Provide, bind: Bind): Tree<Operation> => {
  const tree: Tree<Operation> = {}
  for (const def of declarations.resources) {
    // Answered by its own actions only (a dashboard link is signed per row).
    if (def.ownActions === true) continue
    const keys = hostKeys(def.path)
    // A resource that is also a parent (`webhooks`, `webhooks/deliveries`) has both.
    const node = nodeAt(tree, keys)
    const operations = resourceOperations(def, provide, bind)
    for (const method of operationsOf(def)) node[method] = operations[method]
  }
  for (const a of declarations.actions) nodeAt(tree, hostKeys(a.place))[a.name] = actionOperation(a, provide, bind)
  return tree
}

type Run = <A>(effect: Effect.Effect<A, DomainError>) => Promise<A>

/** The same tree with each operation as a Promise, rejecting with a `PlatformError`. */
const promised = (tree: Tree<Operation>, run: Run): Tree<(...args: ReadonlyArray<unknown>) => Promise<unknown>> => {
  const out: Tree<(...args: ReadonlyArray<unknown>) => Promise<unknown>> = {}
  for (const [key, value] of Object.entries(tree)) {
    out[key] = typeof value === "function" ? (...args) => run(value(...args)) : promised(value, run)
  }
  return out
}

/**
 * The tree built from the declarations, as the type computed from them. A loop over a list of
 * declarations cannot show the compiler the mapped type it builds, so the two meet here, once:
 * `operationsTree` puts each offered operation at the keys its path names, which is what
 * `PlatformEffects` computes from the same declarations; `promised` keeps every key
 * (`Promised`); a scoped tree differs only in its options (`Scoped`). The host tree tests hold
 * the run-time tree to the registry and the type to the declarations.
 */
const asDeclared = <T>(tree: Tree<unknown>): T => tree as T

// ---------------------------------------------------------------- the platform

/** The platform's options, the host's own declarations typed as they were declared (their paths name their places). */
export type CreatePlatformOptions<Resources extends ServedResource, Actions extends ServedAction> =
  & Omit<PlatformOptions, "resources" | "actions">
  & { readonly resources?: ReadonlyArray<Resources> | undefined; readonly actions?: ReadonlyArray<Actions> | undefined }

/**
 * Makes the platform: migrates the store (and runs the host's migrations after), creates the
 * operator organization (and the `admin` key when given), and, unless `dispatcher: false`,
 * delivers webhooks from this process. The host's own resources and actions are in its tree,
 * typed from their declarations, beside the registry's.
 */
export const createPlatform = async <Resources extends ServedResource = never, Actions extends ServedAction = never>(
  options: CreatePlatformOptions<Resources, Actions>
): Promise<ConsentPlatformApi<Resources, Actions>> => {
  const runtime = ManagedRuntime.make(layer({ ...options, dispatcher: options.dispatcher ?? true }))
  const [settings, declarations] = await runtime.runPromise(Effect.all([Settings, Declarations]))
  // Built already: the runtime cannot fail to build any more.
  const provide: Provide = (effect) => Effect.flatMap(Effect.orDie(runtime.runtimeEffect), (rt) => Effect.provide(effect, rt))
  const run: Run = (effect) =>
    runtime.runPromiseExit(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(fromCause(exit.cause))))
  const effects = operationsTree(declarations, provide, (given) => given)
  const asOrganization = (organizationId: string) => new Actor({ _tag: "Client", keyId: HOST_KEY_ID, organizationId, via: "in-process" })
  const forOrganization = (organizationId: string): OrganizationClient<Resources, Actions> => {
    const as = asOrganization(organizationId)
    // The options may be left out since the bind completes them; its `as` comes last, so an `as`
    // a plain-JavaScript caller passes cannot leave the organization.
    const scoped = operationsTree(declarations, provide, (given) => ({ ...given, as }))
    return { ...asDeclared<Promised<Scoped<PlatformEffects<Resources, Actions>>>>(promised(scoped, run)), effect: asDeclared(scoped) }
  }
  return {
    ...asDeclared<Promised<PlatformEffects<Resources, Actions>>>(promised(effects, run)),
    ...operatingMethods(runtime),
    effect: asDeclared(effects),
    asOrganization,
    forOrganization,
    asOperator: () => new Actor({ _tag: "Operator", keyId: HOST_KEY_ID, organizationId: settings.operatorOrganizationId, via: "in-process" }),
    runtime,
    ...(await subscriberMethods(runtime, (effect) => run(provide(effect)))),
    dispose: () => runtime.dispose()
  }
}
