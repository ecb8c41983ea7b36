import type { ServerOptions } from "@cmp/http-express"
import { as, operatorOf, type Tenant } from "@cmp/test-support/http"
import { afterAll, beforeAll, expect } from "vitest"
import { start, type TestServer } from "./helpers.js"

/**
 * One fixture for the HTTP suites: a server over a fresh database of the store under test
 * (`CMP_TEST_STORE`), served by the adapter under test (`CMP_TEST_ADAPTER`), the operator's
 * session, and tenants. `useServer` registers its own `beforeAll`/`afterAll` where it is
 * called and answers handles that are valid from the suite's first hook on, so a file names
 * them once at the top (`const { server, op } = useServer()`) instead of assigning `let`s.
 */

export type Caller = ReturnType<typeof as>

/** An organization with a client key, that key's token, and a caller bound to the token. */
export interface TestTenant extends Tenant {
  readonly call: Caller
}

export type Operator = Awaited<ReturnType<typeof operatorOf>>

/** What the fixture needs of an operator: its caller, new tenants, and their premium features. */
export interface OperatorLike {
  readonly call: Caller
  readonly tenant: () => Promise<Tenant>
  readonly featuresOf: (organizationId: string) => Promise<{ readonly id: string }>
}

export interface FixtureOptions<Op extends OperatorLike> {
  /** Starts the server (default: `start` of `./helpers.ts`). */
  readonly start?: (overrides: Partial<ServerOptions>) => Promise<TestServer>
  /** Signs the operator in (default: `operatorOf`). */
  readonly operatorOf?: (base: string) => Promise<Op>
  /**
   * Tenants made right after the operator signs in: how many (no premium features), or for each
   * the premium features switched on. Their handles are `tenants[i]`.
   */
  readonly tenants?: number | ReadonlyArray<Record<string, boolean>>
  /**
   * `false`: the operator does not sign in (for a server plain HTTP cannot reach, or a suite
   * that counts the operator's sign-ins itself); `op`, `tenant` and `tenants` are then unusable.
   */
  readonly operator?: boolean
  /** Timeout of the start and stop hooks (ms). */
  readonly timeout?: number
}

export interface ServerFixture<Op> {
  /** The running server (its `url`, `clock`, `api`). */
  readonly server: TestServer
  /** The server's URL. */
  readonly base: string
  /** The operator's session and helpers. */
  readonly op: Op
  /** The tenants asked for in the options, in order. */
  readonly tenants: ReadonlyArray<TestTenant>
  /** A new tenant, with these premium features switched on (none by default). */
  readonly tenant: (features?: Record<string, boolean>) => Promise<TestTenant>
}

const notYet = (what: string): never => {
  throw new Error(`useServer: ${what} is used before the suite's beforeAll ran`)
}

/** Forwards every property of `target()` (read when used), so a handle can be named before the value exists. */
const lateBound = <A extends object>(target: () => A): A =>
  new Proxy({} as A, {
    get: (_, p) => Reflect.get(target(), p),
    has: (_, p) => Reflect.has(target(), p),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, p) => {
      const d = Reflect.getOwnPropertyDescriptor(target(), p)
      return d && { ...d, configurable: true }
    }
  })

/** A tenant of the operator, with premium features switched on. */
const tenantOf = async (op: OperatorLike, base: string, features: Record<string, boolean> = {}): Promise<TestTenant> => {
  const t = await op.tenant()
  if (Object.keys(features).length > 0) {
    const flags = await op.featuresOf(t.org.id)
    const patched = await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: features })
    expect(patched.status, patched.text).toBe(200)
  }
  return { ...t, call: as(base, t.token) }
}

/**
 * Server options over the defaults of `start`: an object, or a function read when the server
 * starts (for options known only once an earlier hook ran, such as a mail server's port).
 */
export type Overrides = Partial<ServerOptions> | (() => Partial<ServerOptions>)

export function useServer(overrides?: Overrides, options?: FixtureOptions<Operator>): ServerFixture<Operator>
export function useServer<Op extends OperatorLike>(
  overrides: Overrides,
  options: FixtureOptions<Op> & { readonly operatorOf: (base: string) => Promise<Op> }
): ServerFixture<Op>
export function useServer<Op extends OperatorLike>(
  overrides: Overrides = {},
  options: FixtureOptions<Op> = {}
): ServerFixture<Op> {
  let server: TestServer | undefined
  let op: Op | undefined
  const made: Array<TestTenant> = []
  const asked = typeof options.tenants === "number" ? Array.from({ length: options.tenants }, () => ({})) : (options.tenants ?? [])
  // Plain getters and a forwarding `call`: a file may keep `const asA = a.call` at its top.
  const tenants = asked.map((_, i): TestTenant => {
    const t = () => made[i] ?? notYet(`tenant ${i}`)
    return {
      get org() {
        return t().org
      },
      get key() {
        return t().key
      },
      get secret() {
        return t().secret
      },
      get token() {
        return t().token
      },
      call: (method, path, callOptions) => t().call(method, path, callOptions)
    }
  })
  const running = () => server ?? notYet("the server")
  const tenant = (features?: Record<string, boolean>) => tenantOf(op ?? notYet("the operator"), running().url, features)
  beforeAll(async () => {
    server = await (options.start ?? start)(typeof overrides === "function" ? overrides() : overrides)
    if (options.operator === false) return
    op = await (options.operatorOf ?? (operatorOf as unknown as (base: string) => Promise<Op>))(server.url)
    for (const features of asked) made.push(await tenant(features))
  }, options.timeout)
  afterAll(async () => {
    await server?.close()
  }, options.timeout)
  return {
    server: lateBound(running),
    get base() {
      return running().url
    },
    op: lateBound(() => op ?? notYet("the operator")),
    tenants,
    tenant
  }
}
