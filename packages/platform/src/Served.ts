import {
  actions,
  type DeclarationsShape,
  HostMigrator,
  type Method,
  operationsOf,
  Relations,
  resources,
  type ServedAction,
  type ServedResource,
  type TableDef,
  tables
} from "@cmp/core"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { HostDeclarations, StoreLayer } from "./Options.js"

/**
 * A host's own declarations, checked and added to the registry's. A host's resources and actions
 * live at places of its own: the first segment of their paths is none the platform uses, in its
 * paths or among the host API's own members, so nothing of the host's shadows a route, an item
 * id or a function of the platform's, today's or one added under the same place later. Their
 * tables are not the platform's either. What clashes is refused when the platform is composed.
 */

/** A host's declarations the platform refuses to serve, each problem on a line of the message. */
export class HostDeclarationError extends Data.TaggedError("HostDeclarationError")<{ readonly message: string }> {}

/** The host API's own members beside its tree (`cmp.effect`, `cmp.dispose`, …): no place may take their names. */
export const apiMembers: ReadonlyArray<string> = [
  "effect",
  "asOrganization",
  "forOrganization",
  "asOperator",
  "runtime",
  "dispose",
  "subscribe",
  "unsubscribe",
  "removeSubscriber",
  "health",
  "readiness",
  "metrics"
]

/** The stores' own records of their migrations. */
const storeTables = ["effect_sql_migrations", "host_migrations"]

/** Lower-case words joined by `-`, as every path segment of the API is. */
const SEGMENT = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/
/** What a store takes as a table name without quoting it. */
const TABLE = /^[a-z_][a-z0-9_]*$/
/** `NNNN_name`: the number orders the migrations. */
const MIGRATION = /^\d+_[A-Za-z0-9_]+$/

const camel = (segment: string): string => segment.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())

/** The keys of a path in the host tree: its segments in camelCase. */
export const hostKeys = (path: string): ReadonlyArray<string> => path.split("/").map(camel)

const firstKey = (path: string): string => hostKeys(path)[0]!

/** The HTTP method of each generic operation. */
const genericRoutes: Readonly<Record<Method, string>> = { find: "GET", get: "GET", create: "POST", update: "PUT", patch: "PATCH", remove: "DELETE" }

/** Every problem of a host's declarations: paths, places, tables and migration names. */
const problemsOf = (host: HostDeclarations): ReadonlyArray<string> => {
  const own = host.resources ?? []
  const ownActions = host.actions ?? []
  const problems: Array<string> = []
  const platformPlaces = new Set([
    ...resources.map((def) => firstKey(def.path)),
    ...actions.flatMap((a) => [firstKey(a.place), firstKey(a.path)]),
    ...apiMembers
  ])
  const platformTables = new Set([...tables.map((t) => t.table), ...storeTables])
  const placed = (what: string, path: string, segment: (s: string) => boolean) => {
    const [first = "", ...rest] = path.split("/")
    if (!SEGMENT.test(first) || !rest.every(segment)) {
      problems.push(`${what}: a path is lower-case words joined by "-", its segments by "/"`)
    } else if (platformPlaces.has(firstKey(path))) {
      problems.push(`${what}: "${path.split("/")[0]}" is a place of the platform's; a host's paths start with a segment of their own`)
    }
  }
  // What the host tree holds at each place: the operations there, and the places under it.
  const leaves = new Map<string, string>()
  const leaf = (what: string, label: string, keys: ReadonlyArray<string>) => {
    const at = keys.join(".")
    const before = leaves.get(at)
    if (before !== undefined) problems.push(`${what}: cmp.${at} is already ${before}`)
    else leaves.set(at, label)
  }
  // Each route of the host's, `METHOD path` with `:` for a parameter: an action's must be none of them.
  const routes = new Map<string, string>()
  const paths = new Set<string>()
  for (const def of own) {
    const what = `The resource "${def.path}"`
    placed(what, def.path, (s) => SEGMENT.test(s))
    if (paths.has(def.path)) problems.push(`${what} is declared twice`)
    paths.add(def.path)
    if (!TABLE.test(def.table)) problems.push(`${what}: its table "${def.table}" is not a lower-case SQL name`)
    else if (platformTables.has(def.table)) problems.push(`${what}: the table "${def.table}" is the platform's`)
    if (def.ownActions !== true) {
      for (const method of operationsOf(def)) {
        const label = `the ${method} of the resource "${def.path}"`
        leaf(what, label, [...hostKeys(def.path), method])
        routes.set(`${genericRoutes[method]} ${def.path}${method === "find" || method === "create" ? "" : "/:"}`, label)
      }
    }
  }
  for (const a of ownActions) {
    const what = `The action "${a.place}.${a.name}"`
    placed(what, a.place, (s) => SEGMENT.test(s))
    placed(`${what} (${a.method} ${a.path})`, a.path, (s) => SEGMENT.test(s) || /^:[a-z_]+$/.test(s))
    const route = `${a.method} ${a.path.replace(/:[a-z_]+/g, ":")}`
    const before = routes.get(route)
    if (before !== undefined) problems.push(`${what}: ${a.method} ${a.path} is already ${before}`)
    else routes.set(route, `the action "${a.place}.${a.name}"`)
    leaf(what, `the action "${a.place}.${a.name}"`, [...hostKeys(a.place), a.name])
  }
  for (const [at, label] of leaves) {
    if ([...leaves.keys()].some((other) => other.startsWith(`${at}.`))) problems.push(`cmp.${at}, ${label}, is also a place of others`)
  }
  for (const name of Object.keys(host.migrations ?? {})) {
    if (!MIGRATION.test(name)) problems.push(`The migration "${name}": a migration is named NNNN_name, its number ordering it`)
  }
  return problems
}

/** The registry's declarations and the host's, checked. */
export const declarationsOf = (host: HostDeclarations): DeclarationsShape | HostDeclarationError => {
  const problems = problemsOf(host)
  if (problems.length > 0) return new HostDeclarationError({ message: `The host's declarations are refused:\n- ${problems.join("\n- ")}` })
  const served: ReadonlyArray<ServedResource> = resources
  const servedActions: ReadonlyArray<ServedAction> = actions
  return { resources: [...served, ...(host.resources ?? [])], actions: [...servedActions, ...(host.actions ?? [])] }
}

/** Every stored table with its relations, the host's own among them (they cascade with their organization). */
export const relations = (declarations: DeclarationsShape): Layer.Layer<Relations> => {
  const platform = new Set(tables.map((t) => t.table))
  const own = new Map<string, TableDef>()
  for (const def of declarations.resources) if (!platform.has(def.table)) own.set(def.table, def.tableDef)
  return Layer.succeed(Relations, Relations.of({ tables: [...tables, ...own.values()] }))
}

/** The host's store: the store handed in, with the host's migrations run after its own. */
export const migrated = (store: StoreLayer, migrations: HostDeclarations["migrations"]): StoreLayer =>
  migrations === undefined || Object.keys(migrations).length === 0
    ? store
    : Layer.effectDiscard(Effect.flatMap(HostMigrator, (migrator) => migrator.migrate(migrations))).pipe(Layer.provideMerge(store))
