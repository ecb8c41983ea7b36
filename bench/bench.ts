/**
 * `pnpm bench`: starts the real server as a child process, loads it from this process with
 * autocannon on loopback, and prints one line per figure as `name: value unit (ratio)`. Each
 * figure is measured beside its baseline in the same run: on these 2-core machines only the
 * ratios are stable.
 *
 *   BENCH_SECONDS=10 (load duration per figure), BENCH_CONNECTIONS=50
 *   BENCH_SLICES=5 (turns of a write figure and its bare insert: `paired`)
 *   BENCH_WARMUP=3 (seconds of the same write load each server takes, unmeasured, before its figures)
 *   BENCH_ONLY=events,default,contention,deliveries,latency,get_key,privacy_page,request_log,export,public_events,public_known_events,token_events,verify_log,log_cost
 *     (a subset, e.g. to profile one figure)
 *   BENCH_CONTENTION_ROUNDS=2 (rounds of one process and of two, in turns, in the `contention` figure: contention.ts)
 *   BENCH_LOG_ROUNDS=5 (rounds of each server, in turns, in the `log_cost` figure)
 *   BENCH_VERIFY_ENTRIES=100000 (consent log entries an organization has when its log is verified)
 *   BENCH_POLICY=1 (the organization of the event figures has a consent policy for their regulation)
 *   BENCH_WEBHOOK_HOST=127.0.0.1 (the receiver's host in the webhook's URL; `localhost` makes the
 *     sender resolve a name, as it does a customer's)
 *   BENCH_EXPORT_EVENTS=50000 (events of the organization exported in the `export` figure)
 *   BENCH_STORES=sqlite,postgres (PostgreSQL only where DATABASE_URL is set)
 *   BENCH_SERVER_FLAGS="--heap-growing-percent=0" (node's flags for every server process, e.g. to
 *     weigh a V8 setting against the server's own in alternating runs)
 *   BENCH_ONLY=growth (only when named: the first run seeds stores of up to a million events) and
 *     BENCH_GROWTH=10000,100000,1000000, BENCH_GROWTH_POSTGRES=100000 (consent events the
 *     organization holds, each figure a ratio to the empty store's), BENCH_GROWTH_ROUNDS=2,
 *     BENCH_GROWTH_CACHE=bench/.cache (the seeded SQLite files; see growth.ts)
 *   BENCH_ONLY=expired (only when named, SQLite: the first run seeds a million users) and
 *     EXPIRED_USERS=1000000, EXPIRED_PAGES=30, EXPIRED_WARMUP=3 (a cursor walk of the users whose
 *     consent expired, 1,000 a page; see expired.ts)
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import * as esbuild from "esbuild"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import { type Bench, measureContention } from "./contention.js"
import { measureExpired } from "./expired.js"
import { type GrowthTools, measureGrowth } from "./growth.js"
import { getPage, markdownCpuMs, seedCenter } from "./pages.js"

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 5))
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const SERVER = "packages/server/dist/main.mjs"
/** The same server with the consent log's layer left out, built by `buildWithoutLog` for the `log_cost` figure. */
const SERVER_WITHOUT_LOG = "packages/server/dist.without-log/main.mjs"
const ONLY = new Set(
  (process.env.BENCH_ONLY ?? "events,default,contention,deliveries,latency,get_key,privacy_page,request_log,export,public_events,public_known_events,token_events,verify_log,log_cost").split(",")
)
const LOG_ROUNDS = Number(process.env.BENCH_LOG_ROUNDS ?? 5)
const VERIFY_ENTRIES = Number(process.env.BENCH_VERIFY_ENTRIES ?? 100_000)
/** `BENCH_POLICY=1`: the bench organization has a consent policy for `gdpr`, the regulation of its events. */
const POLICY = process.env.BENCH_POLICY === "1"
// The name the webhook's URL gives its receiver (which listens on 127.0.0.1): a name, such as
// `localhost`, is resolved by the sender as a customer's host name is.
const WEBHOOK_HOST = process.env.BENCH_WEBHOOK_HOST ?? "127.0.0.1"
const EXPORT_EVENTS = Number(process.env.BENCH_EXPORT_EVENTS ?? 50_000)
const STORES = new Set((process.env.BENCH_STORES ?? "sqlite,postgres").split(","))
const root = path.join(import.meta.dirname, "..")
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-bench-"))
const children: Array<ChildProcess> = []

const cleanup = () => {
  // SIGTERM lets a profiled server write its profile.
  for (const c of children) c.kill(process.env.BENCH_PROFILE ? "SIGTERM" : "SIGKILL")
  fs.rmSync(dir, { recursive: true, force: true })
}
process.on("exit", cleanup)

/** Starts a TypeScript entry point as a child and waits for its first JSON line that is not a log. */
const child = (entry: string, env: Record<string, string>, args: Array<string> = []) =>
  new Promise<{ proc: ChildProcess; first: Record<string, any>; lines: readline.Interface }>((resolve, reject) => {
    // `--import tsx` resolves from the working directory: this package has tsx.
    const profile = entry.includes("server") && process.env.BENCH_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []
    // The server runs as `pnpm start` runs it: the bundle built below, plain JavaScript.
    const command = entry.endsWith(".mjs") ? [path.join(root, entry)] : ["--import", "tsx", path.join(root, entry)]
    const flags = entry.includes("server") && process.env.BENCH_SERVER_FLAGS ? process.env.BENCH_SERVER_FLAGS.split(" ") : []
    const proc = spawn(process.execPath, [...profile, ...flags, ...command, ...args], {
      cwd: import.meta.dirname,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "inherit"]
    })
    children.push(proc)
    const lines = readline.createInterface({ input: proc.stdout! })
    // Log lines (startup warnings) may come first: the answer is the first line that is not one.
    const onLine = (line: string) => {
      const parsed = JSON.parse(line)
      if (parsed.logLevel !== undefined) return
      lines.off("line", onLine)
      resolve({ proc, first: parsed, lines })
    }
    lines.on("line", onLine)
    proc.once("exit", (code) => reject(new Error(`${entry} exited with ${code}`)))
  })

const ask = <A = Record<string, number>>(p: { proc: ChildProcess; lines: readline.Interface }, question = "stats") =>
  new Promise<A>((resolve) => {
    p.lines.once("line", (line) => resolve(JSON.parse(line)))
    p.proc.stdin!.write(`${question}\n`)
  })

const json = async (url: string, method: string, body?: unknown, token?: string) => {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const parsed = await res.json() as any
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(parsed)}`)
  return parsed
}

/** Peak resident memory of a process, from the kernel's high-water mark. */
const peakRssMb = (pid: number) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
  return m ? Number(m[1]) / 1024 : Number.NaN
}

/** Resident memory of a process now, in MB. */
const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
  return m ? Number(m[1]) / 1024 : Number.NaN
}

/** CPU time a process has used so far, in ms (user + system, from the kernel's tick counts). */
const cpuMs = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** Runs a load and answers it with the CPU the serving process spent over it, in all and per 2xx answer. */
const withCpu = async <A extends { "2xx": number }>(pid: number, load: () => Promise<A>) => {
  const before = cpuMs(pid)
  const result = await load()
  const cpu = cpuMs(pid) - before
  return { result, cpu, cpuPerRequest: cpu / Math.max(1, result["2xx"]) }
}

/** One side of a paired figure: the process whose CPU is read, and its load for so many seconds. */
interface Side {
  readonly pid: number
  readonly load: (seconds: number) => Promise<autocannon.Result>
}

/**
 * Slices merged: the sums of their answers and their rate over their time. Their p99 is the
 * middle slice's: a slice of 2 s is short enough that one pause of the machine (the load
 * generator's included, up to half a second on these machines) moves its p99, so the highest
 * slice's says more about the machine than about the server. The budget's p99 is the default
 * figure's, one load of SECONDS.
 */
const mergedResults = (results: ReadonlyArray<autocannon.Result>) => {
  const sum = (f: (r: autocannon.Result) => number) => results.reduce((n, r) => n + f(r), 0)
  const statusCodeStats: Record<string, { count: number }> = {}
  for (const r of results) {
    for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) {
      statusCodeStats[code] = { count: (statusCodeStats[code]?.count ?? 0) + (stat as { count: number }).count }
    }
  }
  return {
    "2xx": sum((r) => r["2xx"]),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    requests: { average: sum((r) => r.requests.total) / Math.max(0.001, sum((r) => r.duration)) },
    latency: { p99: [...results.map((r) => r.latency.p99)].sort((a, b) => a - b)[Math.floor(results.length / 2)]! },
    statusCodeStats
  }
}

type Merged = ReturnType<typeof mergedResults>

/**
 * A write figure and the bare insert, loaded in turns: SLICES slices each, SECONDS in all per
 * side, the order swapped every slice (bare, ours, ours, bare, bare, ...) so that both meet the
 * same moments of the machine. These machines' speed drifts by a third within an hour (the same
 * baseline read 0.35 ms and 0.50 ms per event on 2026-11-30), and a baseline measured once, at
 * the start, was a minute or more away from the figures read against it. Answers each side's CPU
 * per 2xx answer, and its slices merged.
 */
const paired = async (bare: Side, ours: Side) => {
  const slice = SECONDS / SLICES
  const runs = new Map<Side, { cpu: number; results: Array<autocannon.Result> }>([[bare, { cpu: 0, results: [] }], [ours, { cpu: 0, results: [] }]])
  for (let i = 0; i < SLICES; i++) {
    for (const side of i % 2 === 0 ? [bare, ours] : [ours, bare]) {
      const run = runs.get(side)!
      const { result, cpu } = await withCpu(side.pid, () => side.load(slice))
      run.results.push(result)
      run.cpu += cpu
    }
  }
  const of = (side: Side) => {
    const { cpu, results } = runs.get(side)!
    const result = mergedResults(results)
    return { result, cpuPerRequest: cpu / Math.max(1, result["2xx"]) }
  }
  return { bare: of(bare), ours: of(ours) }
}

let sequence = 0
const consents = { purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false }], vendors: { enabled: ["v1"] } }
const consentBody = (organizationId: string) =>
  JSON.stringify({ organization_id: organizationId, user: { organization_user_id: `user-${process.pid}-${sequence++}` }, consents })

/** The same event from a browser that knows its visitor only by the id it keeps on the device. */
const guestBody = (organizationId: string) =>
  JSON.stringify({ organization_id: organizationId, user: { id: `guest-${process.pid}-${sequence++}` }, consents })

/**
 * The same event for a known user, from a page the organization's backend rendered with the
 * user id signed by one of its Secrets (HMAC-SHA256 of the id then the expiration, in hex).
 */
const signedUserBody = (organizationId: string, secret: { id: string; value: string }) => {
  const organizationUserId = `known-${process.pid}-${sequence++}`
  const expiration = Math.floor(Date.now() / 1000) + 3600
  const digest = crypto.createHmac("sha256", secret.value).update(`${organizationUserId}${expiration}`, "utf8").digest("hex")
  return JSON.stringify({
    organization_id: organizationId,
    user: {
      organization_user_id: organizationUserId,
      organization_user_id_auth: { algorithm: "hmac-sha256", secret_id: secret.id, digest, expiration }
    },
    consents
  })
}

const bearer = (token: string | undefined): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {})

const postEvents = (
  url: string,
  headers: Record<string, string>,
  body: () => string,
  options: { overallRate?: number; onCreated?: (id: string) => void; seconds?: number; connections?: number } = {}
) =>
  autocannon({
    url,
    connections: options.connections ?? (options.overallRate ? 10 : CONNECTIONS),
    duration: options.seconds ?? SECONDS,
    ...(options.overallRate ? { overallRate: options.overallRate } : {}),
    requests: [{
      method: "POST",
      path: "/v1/consents/events",
      headers: { "content-type": "application/json", ...headers },
      setupRequest: (req) => ({ ...req, body: body() }),
      onResponse: (status, body) => {
        if (status === 201 && options.onCreated) options.onCreated(JSON.parse(body).id)
      }
    }]
  })

const getKey = (url: string, keyId: string, token: string | undefined, seconds = SECONDS) =>
  autocannon({
    url: `${url}/v1/keys/${keyId}`,
    connections: CONNECTIONS,
    duration: seconds,
    headers: token ? { authorization: `Bearer ${token}` } : {}
  })

const line = (name: string, value: number, unit: string, ratio?: string) =>
  console.log(`${name}: ${value.toFixed(value >= 100 ? 0 : 2)} ${unit}${ratio ? ` (${ratio})` : ""}`)

/**
 * The figures the speed budget is kept on, with their targets: printed together at the end of
 * the run, so a change to a write or a read path can state its effect on them. A CPU ratio is
 * the server's CPU per request over its baseline's in the same run (absolute figures swing 2-3x
 * between hours on these machines; the ratios do not).
 */
const budget: Array<{ readonly name: string; readonly value: number; readonly unit: string; readonly target: number; readonly stretch?: number }> = []
const keep = (name: string, value: number, unit: string, target: number, stretch?: number) =>
  budget.push({ name, value, unit, target, ...(stretch === undefined ? {} : { stretch }) })
const printBudget = () => {
  if (budget.length === 0) return
  console.log("# the budget: figure, value, target (stretch), within")
  for (const b of budget) {
    const within = b.value <= b.target ? (b.stretch !== undefined && b.value <= b.stretch ? "yes, and the stretch" : "yes") : "NO"
    console.log(`budget ${b.name}: ${b.value.toFixed(2)}${b.unit} (target ${b.target}${b.unit}${b.stretch !== undefined ? `, stretch ${b.stretch}${b.unit}` : ""}): ${within}`)
  }
}

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

type Child = Awaited<ReturnType<typeof child>>

/** A new organization with these premium features and a key of its own: its id and a token. */
const tenantOf = async (api: string, op: string, features: Record<string, boolean>) => {
  const org = await json(`${api}/v1/organizations`, "POST", { name: `bench-${Date.now()}-${sequence++}` }, op)
  const flags = (await json(`${api}/v1/premium-features?organization_id=${org.id}`, "GET", undefined, op)).data[0]
  await json(`${api}/v1/premium-features/${flags.id}`, "PATCH", features, op)
  const key = await json(`${api}/v1/keys`, "POST", { organization_id: org.id, name: "bench" }, op)
  const token = (await json(`${api}/v1/sessions`, "POST", { type: "api-key", key: key.id, secret: key.secret })).access_token as string
  return { id: org.id as string, token }
}

/**
 * Requests of another organization during an export (SQLite, whose driver is synchronous: a
 * query holds the whole process). Organization A gets EXPORT_EVENTS events, one posted through
 * the API and copied by SQL into the server's database file (posting them all would take
 * minutes). Another organization's `GET /v1/languages` is loaded with 10 connections, first
 * with nothing else running, then while A is exported to a directory again and again; the p99
 * of both is printed, with how long one export took and what a concurrent second export got.
 */
const measureExport = async (api: string, op: string, sqlitePath: string) => {
  const a = await tenantOf(api, op, { consents_api: true, batch_exports_manual_run: true })
  const b = await tenantOf(api, op, {})
  const first = await json(`${api}/v1/consents/events`, "POST", {
    organization_id: a.id,
    created_at: "2026-01-01T00:00:00.000Z",
    user: { organization_user_id: "exported" },
    consents: { purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false }], vendors: { enabled: ["v1"] } }
  }, a.token)
  const { default: Database } = await import("better-sqlite3")
  const db = new Database(sqlitePath)
  db.pragma("busy_timeout = 10000")
  const row = db.prepare("SELECT * FROM consent_events WHERE organization_id = ? AND id = ?").get(a.id, first.id) as Record<string, unknown>
  const columns = Object.keys(row)
  const copied = columns.map((c) =>
    c === "id" ? `'copy-' || n.i` : c === "created_at" ? `strftime('%Y-%m-%dT%H:%M:%fZ', "created_at", '+' || n.i || ' seconds')` : `"${c}"`
  )
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO consent_events (${columns.map((c) => `"${c}"`).join(", ")})
     SELECT ${copied.join(", ")} FROM consent_events, n WHERE organization_id = ? AND id = ?`
  ).run(EXPORT_EVENTS - 1, a.id, first.id)
  db.close()
  const config = await json(`${api}/v1/exports/configs`, "POST", {
    organization_id: a.id,
    name: "bench",
    destinations: [{ type: "directory", path: "bench" }]
  }, a.token)
  const execute = () =>
    fetch(`${api}/v1/exports/execute`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${a.token}` },
      body: JSON.stringify({ organization_id: a.id, export_config_id: config.id, from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" })
    })
  const languages = () =>
    autocannon({ url: `${api}/v1/languages`, connections: 10, duration: SECONDS, headers: { authorization: `Bearer ${b.token}` } })

  const idle = await languages()
  let running = true
  const took: Array<number> = []
  const exporting = (async () => {
    while (running) {
      const started = performance.now()
      const res = await execute()
      const run = await res.json() as any
      if (res.status !== 201 || run.status !== "succeeded" || run.events_count !== EXPORT_EVENTS) {
        throw new Error(`export: ${res.status} ${JSON.stringify(run)}`)
      }
      took.push(performance.now() - started)
    }
  })()
  const loaded = languages()
  await new Promise((r) => setTimeout(r, 500))
  const second = await execute()
  const during = await loaded
  running = false
  await exporting
  line("languages_p99_idle_sqlite", idle.latency.p99, "ms", `p50 ${idle.latency.p50} ms, ${idle.requests.average.toFixed(0)} req/s, ${idle.non2xx + idle.errors} errors`)
  line(
    "languages_p99_during_export_sqlite",
    during.latency.p99,
    "ms",
    `p50 ${during.latency.p50} ms, max ${during.latency.max} ms, ${during.requests.average.toFixed(0)} req/s, ${during.non2xx + during.errors} errors; ` +
      `${took.length} exports of ${EXPORT_EVENTS} events, ${(took.reduce((x, y) => x + y, 0) / Math.max(1, took.length) / 1000).toFixed(1)} s each; ` +
      `a concurrent second export got ${second.status}${second.headers.get("retry-after") ? ` (Retry-After ${second.headers.get("retry-after")})` : ""}`
  )
}

/**
 * Verifying a consent log of VERIFY_ENTRIES entries: an organization gets that many events, each
 * of a new user (one entry each: the user and its event in one transaction), through the API as
 * fast as the server takes them; then `GET /v1/consents/log/verify` is timed, with the CPU the
 * server spent on it. On SQLite they are sent one at a time: a group commit of several would
 * write one entry per chain for all of them, and the log would hold fewer entries than events.
 */
const measureVerify = async (api: string, op: string, server: Child, store: string) => {
  const t = await tenantOf(api, op, { consents_api: true })
  const filled = await autocannon({
    url: api,
    connections: store === "sqlite" ? 1 : CONNECTIONS,
    amount: VERIFY_ENTRIES,
    requests: [{
      method: "POST",
      path: "/v1/consents/events",
      headers: { "content-type": "application/json", authorization: `Bearer ${t.token}` },
      setupRequest: (req) => ({ ...req, body: consentBody(t.id) })
    }]
  })
  if (filled.non2xx + filled.errors > 0) throw new Error(`verify_log: ${filled.non2xx + filled.errors} of the writes failed`)
  const before = cpuMs(server.proc.pid!)
  // What the verify holds shows as the server's resident memory growing while it runs.
  const rssBefore = rssMb(server.proc.pid!)
  let rssPeak = rssBefore
  const sampling = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(server.proc.pid!))), 20)
  const started = performance.now()
  const answer = await json(`${api}/v1/consents/log/verify?organization_id=${t.id}`, "GET", undefined, t.token)
  const wall = performance.now() - started
  clearInterval(sampling)
  const cpu = cpuMs(server.proc.pid!) - before
  if (answer.valid !== true) throw new Error(`verify_log: the log is not valid: ${JSON.stringify(answer)}`)
  line(
    `consent_log_verify_${store}`,
    answer.entries / (wall / 1000),
    "entries/s",
    `${answer.entries} entries covering ${VERIFY_ENTRIES} events and as many users, in ${(wall / 1000).toFixed(1)} s, ${(cpu / 1000).toFixed(1)} s of server CPU, ` +
      `server RSS ${rssBefore.toFixed(0)} MB before, +${(rssPeak - rssBefore).toFixed(0)} MB at most during it`
  )
}

/**
 * The server's version and whether it vacuums on its own: with autovacuum off (as on some test
 * machines) nothing removes the dead row versions an outbox's updates leave, and the figures of a
 * long run read more of them than a server as PostgreSQL ships it would.
 */
const pgSettings = async (base: string) => {
  const { default: pg } = await import("pg")
  const c = new pg.Client({ connectionString: base })
  await c.connect()
  try {
    const { rows } = await c.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'autovacuum')"
    )
    const of = (name: string) => rows.find((r) => r.name === name)?.setting ?? "?"
    return `PostgreSQL ${of("server_version")}, autovacuum ${of("autovacuum")}`
  } finally {
    await c.end()
  }
}

/** A fresh PostgreSQL database for one run, dropped at exit. */
const pgDatabase = async (base: string, name: string) => {
  const { default: pg } = await import("pg")
  const admin = async (statement: string) => {
    const c = new pg.Client({ connectionString: base })
    await c.connect()
    try {
      await c.query(statement)
    } finally {
      await c.end()
    }
  }
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
  await admin(`CREATE DATABASE "${name}"`)
  process.on("exit", () => {
    spawn("psql", [base, "-qc", `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`], { stdio: "ignore", detached: true })
  })
  const u = new URL(base)
  u.pathname = `/${name}`
  return u.toString()
}

/**
 * The server bundle with the consent log's layer left out (every write as it would be without the
 * log), built beside `dist/` from the same sources and options as `build.mjs`'s. Only the bench
 * makes it: the product has no way to run without its log.
 */
const buildWithoutLog = async () => {
  const options: string = "../packages/server/bundle.mjs"
  const { asciiOutputs, bundleOptions } = (await import(options)) as {
    asciiOutputs: (outdir: string) => void
    bundleOptions: (outdir: string) => esbuild.BuildOptions
  }
  const outdir = path.join(root, path.dirname(SERVER_WITHOUT_LOG))
  fs.rmSync(outdir, { recursive: true, force: true })
  await esbuild.build({
    ...bundleOptions(outdir),
    metafile: false,
    plugins: [{
      name: "without-consent-log",
      setup: (b: esbuild.PluginBuild) =>
        b.onLoad({ filter: /[\\/]core[\\/]src[\\/]Consents[\\/]ConsentLog\.ts$/ }, (args) => {
          const source = fs.readFileSync(args.path, "utf8")
          const declared = "export const layer: Layer.Layer<Storage,"
          if (!source.includes(declared)) throw new Error(`log_cost: ${args.path} no longer declares ${declared}`)
          return {
            loader: "ts",
            // The store's own Storage, passed through untouched.
            contents: `${source.replace(declared, "const logged: Layer.Layer<Storage,")}
export const layer = Layer.effect(Storage, Storage)`
          }
        })
    }]
  })
  asciiOutputs(outdir)
}

/**
 * What the consent log costs a write: two servers of the same code, one built without the log's
 * layer, each on a database of its own with the same organization, webhook and warm-up, loaded in
 * turns (BENCH_LOG_ROUNDS rounds each, BENCH_SECONDS long). Printed: the mean CPU per event of
 * each and how much more the logged one spends.
 */
const measureLogCost = async (store: "sqlite" | "postgres", serverEnv: Record<string, string>, receiver: Child) => {
  const servers: Array<{ name: string; proc: Child; tenant: Awaited<ReturnType<typeof setUp>>; cpu: Array<number> }> = []
  for (const [name, entry] of [["with", SERVER], ["without", SERVER_WITHOUT_LOG]] as const) {
    const env = {
      ...serverEnv,
      SQLITE_PATH: path.join(dir, `log-${name}-${store}.db`),
      ...(store === "postgres" ? { DATABASE_URL: await pgDatabase(process.env.DATABASE_URL!, `cmp_bench_log_${name}_${process.pid}`) } : {})
    }
    const proc = await child(entry, env)
    const tenant = await setUp(proc.first.url as string, receiver)
    servers.push({ name, proc, tenant, cpu: [] })
  }
  for (const s of servers) {
    if (WARMUP > 0) await postEvents(s.proc.first.url as string, bearer(s.tenant.token), () => consentBody(s.tenant.org.id), { seconds: WARMUP })
  }
  let errors = 0
  for (let round = 0; round < LOG_ROUNDS; round++) {
    // The first server of a round alternates, so neither always follows the other's load.
    for (const s of round % 2 === 0 ? servers : [...servers].reverse()) {
      const { cpuPerRequest, result } = await withCpu(s.proc.proc.pid!, () =>
        postEvents(s.proc.first.url as string, bearer(s.tenant.token), () => consentBody(s.tenant.org.id)))
      errors += result.non2xx + result.errors
      s.cpu.push(cpuPerRequest)
    }
  }
  for (const s of servers) await stopChild(s.proc)
  const [logged, bare] = servers.map((s) => ({
    mean: s.cpu.reduce((a, b) => a + b, 0) / s.cpu.length,
    rounds: s.cpu.map((c) => c.toFixed(2)).join(", ")
  })) as [{ mean: number; rounds: string }, { mean: number; rounds: string }]
  line(
    `consent_log_cost_${store}`,
    ((logged.mean / bare.mean) - 1) * 100,
    "% CPU per event",
    `with the log ${logged.mean.toFixed(3)} ms (${logged.rounds}), without ${bare.mean.toFixed(3)} ms (${bare.rounds}), ` +
      `${LOG_ROUNDS} rounds of ${SECONDS} s each in turns, ${errors} errors`
  )
}

/** The receiver's counters once `expected` messages have arrived since its last reset, or after `withinMs` (3 minutes). */
const arrived = async (receiver: Child, expected: number, withinMs = 180_000) => {
  const started = Date.now()
  let got = await ask(receiver)
  while (got.count! < expected && Date.now() - started < withinMs) {
    await new Promise((r) => setTimeout(r, 250))
    got = await ask(receiver)
  }
  return got
}

const stopChild = (c: { readonly proc: ChildProcess }) => {
  const gone = new Promise((resolve) => c.proc.once("exit", resolve))
  c.proc.kill(process.env.BENCH_PROFILE ? "SIGTERM" : "SIGKILL")
  return gone
}

/** The helpers and settings the figures of other modules take. */
const harness: Bench = {
  start: (env) => child(SERVER, env),
  startBare: (database, receiver) =>
    startBareDelivery({ BASELINE_PG: database }, receiver),
  database: (name) => pgDatabase(process.env.DATABASE_URL!, name),
  stop: stopChild,
  ask,
  postEvents,
  cpuMs,
  line,
  keep,
  seconds: SECONDS,
  warmup: WARMUP,
  connections: CONNECTIONS
}

/** An organization with the consents API, webhooks, and a webhook to the receiver: the operator's token, the organization, its key and the key's token. */
const setUp = async (api: string, receiver: Child) => {
  const op = (await json(`${api}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "bench-secret-0123456789" })).access_token as string
  const org = await json(`${api}/v1/organizations`, "POST", { name: `bench-${Date.now()}-${sequence++}` }, op)
  const flags = (await json(`${api}/v1/premium-features?organization_id=${org.id}`, "GET", undefined, op)).data[0]
  await json(`${api}/v1/premium-features/${flags.id}`, "PATCH", {
    consents_api: true,
    webhooks: true,
    ...(ONLY.has("public_events") ? { store_guest_cmp_consents: true } : {}),
    ...(ONLY.has("public_known_events") || ONLY.has("token_events") ? { store_cmp_consents: true } : {})
  }, op)
  const key = await json(`${api}/v1/keys`, "POST", { organization_id: org.id, name: "bench" }, op)
  const token = (await json(`${api}/v1/sessions`, "POST", { type: "api-key", key: key.id, secret: key.secret })).access_token as string
  await json(`${api}/v1/webhooks`, "POST", {
    organization_id: org.id,
    url: `http://${WEBHOOK_HOST}:${receiver.first.port}/hook`,
    event_types: ["event.created"]
  }, token)
  if (POLICY) {
    // What a consent event costs with its regulation's policy in place (expiry, GPC, essential purposes).
    await json(`${api}/v1/consents/policies`, "POST", {
      organization_id: org.id,
      regulation: "gdpr",
      consent_duration: 13,
      consent_duration_unit: "months",
      denied_consent_duration: 6,
      denied_consent_duration_unit: "months",
      gpc_purpose_ids: ["ads"],
      essential_purpose_ids: ["essential"]
    }, token)
  }
  return { op, org, key, token }
}

/**
 * Consent events on the deployment a user starts by default (`pnpm start`: its own dispatcher
 * delivering each event's webhook as it comes, the request log on), beside the same baseline:
 * the figure the budget is kept on. Every message of the load must arrive within a minute after
 * it. Answers the server's peak memory.
 */
const measureDefault = async (
  store: "sqlite" | "postgres",
  serverEnv: Record<string, string>,
  receiver: Child,
  t: { token: string; org: { id: string }; bare: Side; undelivered: number }
) => {
  const { LOG_LEVEL: _quiet, WEBHOOK_DISPATCHER: _split, ...shipped } = serverEnv
  await ask(receiver, "reset")
  const single = await child(SERVER, shipped)
  const url = single.first.url as string
  // What earlier figures queued is delivered first, so this one pays only for its own.
  await arrived(receiver, t.undelivered)
  await ask(receiver, "reset")
  // The load's own events, by id: what arrives is matched to them, not merely counted.
  const created = new Set<string>()
  const onCreated = (id: string) => created.add(id)
  let arrivals = new Map<string, number>()
  const missing = () => [...created].filter((id) => !arrivals.has(id)).length
  /** Waits until every event created so far has its webhook, or a minute has passed. */
  const delivered = async (since: number) => {
    do {
      await new Promise((r) => setTimeout(r, 250))
      arrivals = new Map(await ask<Array<[string, number]>>(receiver, "arrivals"))
    } while (missing() > 0 && Date.now() - since < 60_000)
  }
  if (WARMUP > 0) {
    await postEvents(url, bearer(t.token), () => consentBody(t.org.id), { seconds: WARMUP, onCreated })
    // The warm-up's messages are delivered before the load, so the load pays for its own only.
    await delivered(Date.now())
  }
  const pid = single.proc.pid!
  // The bare insert, loaded just before the load and just after its last webhook, half of
  // SECONDS each: its CPU per event then is what this figure is read against.
  const bareRuns: Array<{ cpu: number; answered: number }> = []
  const bareNow = async () => {
    const { result, cpu } = await withCpu(t.bare.pid, () => t.bare.load(SECONDS / 2))
    bareRuns.push({ cpu, answered: result["2xx"] })
  }
  await bareNow()
  const cpuBefore = cpuMs(pid)
  const { cpuPerRequest, result } = await withCpu(pid, () => postEvents(url, bearer(t.token), () => consentBody(t.org.id), { onCreated }))
  const ended = Date.now()
  await delivered(ended)
  // The server's CPU until its dispatcher has delivered the load's last webhook (a poll of the
  // receiver every 250 ms: an idle dispatcher's own polls are in it too), per answered event.
  const cpuDelivered = (cpuMs(pid) - cpuBefore) / Math.max(1, result["2xx"])
  await bareNow()
  const baseCpu = bareRuns.reduce((n, r) => n + r.cpu, 0) / Math.max(1, bareRuns.reduce((n, r) => n + r.answered, 0))
  const last = Math.max(ended, ...[...created].flatMap((id) => (arrivals.has(id) ? [arrivals.get(id)!] : [])))
  line(
    `consent_events_default_${store}`,
    result.requests.average,
    "req/s",
    `${(cpuDelivered / baseCpu).toFixed(2)}x the baseline's CPU (${baseCpu.toFixed(2)} ms), ${result.non2xx + result.errors} errors, p99 ${result.latency.p99} ms, ` +
      `${cpuDelivered.toFixed(2)} ms CPU each with its webhook delivered (${cpuPerRequest.toFixed(2)} ms over the load alone); ` +
      `${created.size - missing()}/${created.size} webhooks arrived, the last ${((last - ended) / 1000).toFixed(1)} s after the load`
  )
  keep(`consent_event_cpu_ratio_${store}`, cpuDelivered / baseCpu, "x", store === "sqlite" ? 2.5 : 3.5, store === "sqlite" ? 2 : 3)
  if (store === "sqlite") keep("consent_event_p99_sqlite", result.latency.p99, " ms", 50)
  if (missing() > 0) console.log(`# consent_events_default_${store}: ${missing()} webhooks had not arrived a minute after the load`)
  const peak = peakRssMb(single.proc.pid!)
  await stopChild(single)
  await measureBareDelivery(store, receiver, t.org.id, cpuDelivered, baseCpu)
  return peak
}

/** The bare delivery (`baseline.ts` with its webhook to the receiver) on this database, its address as `first.url`. */
const startBareDelivery = async (database: Record<string, string>, receiver: Child) => {
  const bare = await child("bench/baseline.ts", {
    ...database,
    BASELINE_WEBHOOK: `http://127.0.0.1:${receiver.first.port}/hook`,
    BASELINE_WEBHOOK_SECRET: `whsec_${crypto.randomBytes(32).toString("base64")}`
  })
  return { ...bare, first: { ...bare.first, url: `http://127.0.0.1:${bare.first.port}` } }
}

/**
 * The least a server that delivers each event's webhook must spend (`baseline.ts` with its
 * webhook: the event and its outbox message written together, the message sent signed on
 * kept-alive connections and marked delivered), loaded and counted as the default figure is:
 * from the load's start until its last webhook arrived. Not a target: it shows how much of the
 * default figure's ratio to the bare insert any delivering server pays.
 */
const measureBareDelivery = async (store: "sqlite" | "postgres", receiver: Child, organizationId: string, cpuDelivered: number, baseCpu: number) => {
  const database: Record<string, string> = store === "postgres"
    ? { BASELINE_PG: await pgDatabase(process.env.DATABASE_URL!, `cmp_bench_deliver_${process.pid}`) }
    : { BASELINE_DB: path.join(dir, "baseline-delivering.db") }
  const bare = await startBareDelivery(database, receiver)
  const url = bare.first.url as string
  await ask(receiver, "reset")
  let sent = 0
  if (WARMUP > 0) {
    sent += (await postEvents(url, {}, () => consentBody(organizationId), { seconds: WARMUP }))["2xx"]
    await arrived(receiver, sent, 60_000)
  }
  const before = cpuMs(bare.proc.pid!)
  const result = await postEvents(url, {}, () => consentBody(organizationId))
  sent += result["2xx"]
  const got = await arrived(receiver, sent, 60_000)
  const cpu = (cpuMs(bare.proc.pid!) - before) / Math.max(1, result["2xx"])
  line(
    `consent_events_default_${store}_bare_delivery`,
    result.requests.average,
    "req/s",
    `${cpu.toFixed(2)} ms CPU each with its webhook delivered, ${(cpu / baseCpu).toFixed(2)}x the bare insert; ` +
      `the default figure is ${(cpuDelivered / cpu).toFixed(2)}x it; ${got.count}/${sent} webhooks arrived`
  )
  await stopChild(bare)
}

/** A server's environment, on this SQLite file or, where `databaseUrl` is given, on that PostgreSQL database. */
const serverEnvOf = (sqlitePath: string, databaseUrl: string | undefined): Record<string, string> => ({
  PORT: "0",
  SQLITE_PATH: sqlitePath,
  DATABASE_URL: databaseUrl ?? "",
  ALLOW_HTTP: "true",
  LOG_LEVEL: "Warning",
  ADMIN_API_KEY: "admin",
  ADMIN_API_SECRET: "bench-secret-0123456789",
  WEBHOOK_ALLOW_HOSTS: WEBHOOK_HOST,
  EXPORTS_ROOT: path.join(dir, "exports"),
  // Delivery runs in a `pnpm worker` process (started by the `deliveries` figure), the deployment
  // that scales it.
  WEBHOOK_DISPATCHER: "false",
  // Every request of the bench comes from 127.0.0.1 with one public key: limits far above what
  // it can send, so the figures are the cost of a write, not the limiter's 429s.
  PUBLIC_RATE_LIMIT: "100000000,100000000"
})

/** The figures of one store: consent events beside the bare insert, then webhook deliveries. */
const measureStore = async (store: "sqlite" | "postgres", receiver: Child) => {
  const pgUrl = store === "postgres" ? await pgDatabase(process.env.DATABASE_URL!, `cmp_bench_${process.pid}`) : undefined
  const pgBaseline = store === "postgres" ? await pgDatabase(process.env.DATABASE_URL!, `cmp_bench_base_${process.pid}`) : undefined
  const baseline = await child("bench/baseline.ts", {
    BASELINE_DB: path.join(dir, `baseline-${store}.db`),
    ...(pgBaseline ? { BASELINE_PG: pgBaseline } : {})
  })
  const serverEnv = serverEnvOf(path.join(dir, `consent-${store}.db`), pgUrl)
  const server = await child(SERVER, serverEnv)
  const api = server.first.url as string
  let worker: Child | undefined

  const { op, org, key, token } = await setUp(api, receiver)

  // Consent events accepted per second, beside the bare insert.
  await ask(receiver, "reset")
  const publicWrites = ONLY.has("public_events") || ONLY.has("public_known_events") || ONLY.has("token_events")
  let ours: Merged | undefined
  // Each server first takes the same load for BENCH_WARMUP seconds, unmeasured: the figures are
  // of a server whose code is compiled, as one is after its first seconds of traffic, not of its
  // JIT compiler's first work (which grows with the code a write runs, and would otherwise be a
  // good share of a 10 s figure on these 2 cores).
  let warmed = 0
  // Messages queued by the writes below that no worker has delivered yet: the latency figure
  // waits for them first, or it would time the dispatcher's backlog instead of a new event.
  let undelivered = 0
  // The bare insert, loaded beside each write figure in turns with it (`paired`).
  const bare: Side = {
    pid: baseline.proc.pid!,
    load: (seconds) => postEvents(`http://127.0.0.1:${baseline.first.port}`, {}, () => consentBody(org.id), { seconds })
  }
  if (ONLY.has("events") || ONLY.has("deliveries") || ONLY.has("default") || publicWrites) {
    if (WARMUP > 0) {
      await bare.load(WARMUP)
      warmed = (await postEvents(api, bearer(token), () => consentBody(org.id), { seconds: WARMUP }))["2xx"]
      undelivered += warmed
    }
  }
  if (ONLY.has("events") || ONLY.has("deliveries")) {
    const figure = await paired(bare, { pid: server.proc.pid!, load: (seconds) => postEvents(api, bearer(token), () => consentBody(org.id), { seconds }) })
    const base = figure.bare.result
    const ourCpu = figure.ours.cpuPerRequest
    line(`consent_events_${store}_baseline`, base.requests.average, "req/s", `${figure.bare.cpuPerRequest.toFixed(2)} ms CPU each`)
    ours = figure.ours.result
    undelivered += ours["2xx"]
    keep(`consent_event_cpu_ratio_${store}_split`, ourCpu / figure.bare.cpuPerRequest, "x", store === "sqlite" ? 2.5 : 3.5, store === "sqlite" ? 2 : 3)
    line(
      `consent_events_${store}`,
      ours.requests.average,
      "req/s",
      `${(ours.requests.average / base.requests.average).toFixed(2)} of baseline, ${ours.non2xx + ours.errors} errors, p99 ${ours.latency.p99} ms, ${ourCpu.toFixed(2)} ms CPU each`
    )

    // Webhook deliveries per second: every accepted event queued one message, and no worker ran
    // meanwhile; a worker now drains that backlog.
    if (ONLY.has("deliveries")) {
      worker = await child(SERVER, serverEnv, ["worker"])
      // From the worker's start line: its start-up is not a delivery's cost.
      const workerCpu = cpuMs(worker.proc.pid!)
      // The warm-up's events queued their messages too.
      const expected = warmed + ours["2xx"]
      const got = await arrived(receiver, expected)
      const perMessage = (cpuMs(worker.proc.pid!) - workerCpu) / Math.max(1, got.count!)
      const spanSeconds = (got.last! - got.first!) / 1000
      line(
        `webhook_deliveries_${store}`,
        got.count! / Math.max(spanSeconds, 0.001),
        "msg/s",
        `${got.count}/${expected} delivered over ${spanSeconds.toFixed(1)} s, ${perMessage.toFixed(2)} ms of the worker's CPU each`
      )
      if (got.count! >= expected) undelivered = 0
      if (publicWrites) {
        // The public writes below are measured with nothing else running, as the events above.
        line(`worker_peak_rss_${store}`, peakRssMb(worker.proc.pid!), "MB")
        await stopChild(worker)
        worker = undefined
      }
    }
  }

  // The same event through the organization's public key, as a browser sends it: with the
  // page's origin, which the organization's property website makes its own. Same webhook, so
  // each write also queues its message.
  if (publicWrites) {
    const website = "https://bench.example"
    await json(`${api}/v1/properties`, "POST", { organization_id: org.id, name: "bench", website }, token)
    const headers = { "x-public-api-key": org.public_api_key as string, origin: website }
    /** A public-key or consent-token write, beside the bare insert and held to the bearer write's target (split deployment). */
    const measureWrite = async (name: string, load: Side["load"]) => {
      const figure = await paired(bare, { pid: server.proc.pid!, load })
      const { cpuPerRequest, result } = figure.ours
      undelivered += result["2xx"]
      const refused = Object.entries(result.statusCodeStats).filter(([code]) => !code.startsWith("2"))
      const ratio = cpuPerRequest / figure.bare.cpuPerRequest
      line(
        `${name}_${store}`,
        result.requests.average,
        "req/s",
        `${(result.requests.average / figure.bare.result.requests.average).toFixed(2)} of baseline` +
          (ours ? `, ${(result.requests.average / ours.requests.average).toFixed(2)} of the bearer write` : "") +
          `, ${ratio.toFixed(2)}x the baseline's CPU` +
          `, ${result.non2xx + result.errors} errors${refused.length > 0 ? ` (${refused.map(([code, s]) => `${code}: ${s.count}`).join(", ")})` : ""}` +
          `, p99 ${result.latency.p99} ms, ${cpuPerRequest.toFixed(2)} ms CPU each (the bare insert ${figure.bare.cpuPerRequest.toFixed(2)} ms)`
      )
      keep(`${name}_cpu_ratio_${store}`, ratio, "x", store === "sqlite" ? 2.5 : 3.5, store === "sqlite" ? 2 : 3)
    }
    const measurePublic = async (name: string, body: () => string) => {
      // One write first, so a refusal stops the bench with its reason instead of a count of errors.
      const first = await fetch(`${api}/v1/consents/events`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: body() })
      if (first.status !== 201) throw new Error(`${name}: public write answered ${first.status} ${await first.text()}`)
      undelivered += 1
      await measureWrite(name, (seconds) => postEvents(api, headers, body, { seconds }))
    }
    if (ONLY.has("public_events")) await measurePublic("consent_events_public", () => guestBody(org.id))
    if (ONLY.has("token_events")) {
      // The same event from an end user's own app holding a consent token its backend minted
      // (`POST /v1/consents/tokens`): 200 users, one token each, taken in turn.
      const tokens = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
        const minted = await json(`${api}/v1/consents/tokens`, "POST", { organization_id: org.id, organization_user_id: `token-${process.pid}-${i}`, lifetime: 3600 }, token)
        return { user: minted.organization_user_id as string, idToken: minted.id_token as string }
      }))
      let turn = 0
      await measureWrite("consent_events_token", (seconds) =>
        autocannon({
          url: api,
          connections: CONNECTIONS,
          duration: seconds,
          requests: [{
            method: "POST",
            path: "/v1/consents/events",
            setupRequest: (req) => {
              const t = tokens[turn++ % tokens.length]!
              return {
                ...req,
                headers: { "content-type": "application/json", authorization: `Bearer ${t.idToken}` },
                body: JSON.stringify({ organization_id: org.id, user: { organization_user_id: t.user }, consents })
              }
            }
          }]
        }))
    }
    if (ONLY.has("public_known_events")) {
      const secret = await json(`${api}/v1/secrets`, "POST", { organization_id: org.id, name: "bench" }, token)
      await measurePublic("consent_events_public_known", () => signedUserBody(org.id, { id: secret.id, value: secret.secret }))
    }
  }

  if (store === "sqlite" && ONLY.has("get_key")) {
    // A keyed read, beside a bare handler answering the same JSON from memory.
    const { cpuPerRequest: bareCpu, result: bare } = await withCpu(baseline.proc.pid!, () => getKey(`http://127.0.0.1:${baseline.first.port}`, key.id, undefined))
    const { cpuPerRequest: readCpu, result: read } = await withCpu(server.proc.pid!, () => getKey(api, key.id, token))
    line("get_key_baseline", bare.requests.average, "req/s", `${bareCpu.toFixed(2)} ms CPU each`)
    keep("get_key_cpu_ratio_sqlite", readCpu / bareCpu, "x", 1.5, 1.25)
    line("get_key", read.requests.average, "req/s", `${(read.requests.average / bare.requests.average).toFixed(2)} of baseline, ${read.non2xx + read.errors} errors, ${readCpu.toFixed(2)} ms CPU each`)
    // The same read from a server with its request log on, as `pnpm start` ships it (LOG_LEVEL=Info).
    const logged = await child(SERVER, { ...serverEnv, LOG_LEVEL: "Info" })
    // Warmed like the server above, which the write figures warmed: a cold one pays for its JIT.
    if (WARMUP > 0) await getKey(logged.first.url as string, key.id, token, WARMUP)
    const { cpuPerRequest: loggedCpu, result: loggedRead } = await withCpu(logged.proc.pid!, () => getKey(logged.first.url as string, key.id, token))
    await stopChild(logged)
    keep("get_key_cpu_ratio_sqlite_logged", loggedCpu / bareCpu, "x", 1.5, 1.25)
    line(
      "get_key_logged",
      loggedRead.requests.average,
      "req/s",
      `${(loggedRead.requests.average / bare.requests.average).toFixed(2)} of baseline, ${loggedRead.non2xx + loggedRead.errors} errors, ${loggedCpu.toFixed(2)} ms CPU each`
    )
    if (ONLY.has("privacy_page")) {
      // A hosted privacy center's page: at most a keyed read plus one rendering of its Markdown policy.
      const centerId = await seedCenter(json, api, org.id, token)
      const markdown = markdownCpuMs()
      const { cpuPerRequest: pageCpu, result: page } = await withCpu(server.proc.pid!, () => getPage(api, centerId, SECONDS, CONNECTIONS))
      line("privacy_page_markdown", markdown, "ms CPU", "one rendering of a 6 KB policy, in this process")
      line(
        "privacy_page",
        page.requests.average,
        "req/s",
        `${page.non2xx + page.errors} errors, p99 ${page.latency.p99} ms, ${pageCpu.toFixed(2)} ms CPU each, ` +
          `${(pageCpu / (readCpu + markdown)).toFixed(2)} of a keyed read plus the Markdown`
      )
      keep("privacy_page_cpu_vs_keyed_read_plus_markdown", pageCpu / (readCpu + markdown), "x", 1)
    }
  }
  if (store === "sqlite" && ONLY.has("request_log")) {
    // The request path with its log line (`LOG_LEVEL=Info`: one JSON line per request, with the
    // route, status, principal kind and organization) beside the same server without it.
    const logged = await child(SERVER, { ...serverEnv, LOG_LEVEL: "Info" })
    if (WARMUP > 0) await getKey(logged.first.url as string, key.id, token, WARMUP)
    const { cpuPerRequest: offCpu, result: off } = await withCpu(server.proc.pid!, () => getKey(api, key.id, token))
    const { cpuPerRequest: onCpu, result: on } = await withCpu(logged.proc.pid!, () => getKey(logged.first.url as string, key.id, token))
    line("get_key_log_off", off.requests.average, "req/s", `${off.non2xx + off.errors} errors, ${offCpu.toFixed(2)} ms CPU each`)
    line(
      "get_key_log_on",
      on.requests.average,
      "req/s",
      `${(on.requests.average / off.requests.average).toFixed(2)} of log off, ${on.non2xx + on.errors} errors, ${onCpu.toFixed(2)} ms CPU each`
    )
    await stopChild(logged)
  }
  if (store === "sqlite" && ONLY.has("export")) await measureExport(api, op, serverEnv.SQLITE_PATH)
  if (ONLY.has("verify_log")) await measureVerify(api, op, server, store)
  let serverPeak = peakRssMb(server.proc.pid!)
  if (worker) {
    line(`worker_peak_rss_${store}`, peakRssMb(worker.proc.pid!), "MB")
    await stopChild(worker)
  }
  await stopChild(server)
  if (ONLY.has("default")) {
    serverPeak = Math.max(serverPeak, await measureDefault(store, serverEnv, receiver, { token, org, bare, undelivered }))
    undelivered = 0
  }
  if (store === "postgres" && ONLY.has("contention")) {
    const { LOG_LEVEL: _quiet, WEBHOOK_DISPATCHER: _split, ...shipped } = serverEnv
    await measureContention(harness, shipped, receiver, { headers: bearer(token), body: () => consentBody(org.id), undelivered })
    undelivered = 0
  }

  // Latency from the event's 201 to its arrival, at a steady 200 events/s, on the default
  // deployment: one `pnpm start` process whose own dispatcher is woken by each commit.
  if (ONLY.has("latency")) {
    await ask(receiver, "reset")
    const single = await child(SERVER, { ...serverEnv, WEBHOOK_DISPATCHER: "true" })
    const url = single.first.url as string
    await arrived(receiver, undelivered)
    await ask(receiver, "reset")
    const created = new Map<string, number>()
    await postEvents(url, bearer(token), () => consentBody(org.id), { overallRate: 200, onCreated: (id) => created.set(id, performance.timeOrigin + performance.now()) })
    await new Promise((r) => setTimeout(r, 3000))
    const arrivals = new Map(await ask<Array<[string, number]>>(receiver, "arrivals"))
    const latencies = [...created.entries()].flatMap(([id, t]) => (arrivals.has(id) ? [arrivals.get(id)! - t] : []))
    line(
      `webhook_latency_p99_${store}`,
      percentile(latencies, 99),
      "ms",
      `at 200 events/s, p50 ${percentile(latencies, 50).toFixed(0)} ms, ${latencies.length}/${created.size} arrived`
    )
    serverPeak = Math.max(serverPeak, peakRssMb(single.proc.pid!))
    await stopChild(single)
  }
  line(`server_peak_rss_${store}`, serverPeak, "MB")
  keep(`server_peak_rss_${store}`, serverPeak, " MB", 250, 200)
  baseline.proc.kill("SIGKILL")
  if (ONLY.has("log_cost")) await measureLogCost(store, serverEnv, receiver)
}

const main = async () => {
  await new Promise<void>((resolve, reject) =>
    spawn(process.execPath, [path.join(root, "packages/server/build.mjs")], { stdio: "inherit" })
      .once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`server build exited with ${code}`)))))
  if (ONLY.has("log_cost")) await buildWithoutLog()
  console.log(`# ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? "?"}, Node ${process.version}, ${new Date().toISOString()}`)
  const receiver = await child("bench/receiver.ts", {})
  // `growth` and `expired` have servers of their own, on seeded stores.
  const ofStore = [...ONLY].some((name) => name !== "growth" && name !== "expired")
  const growth: GrowthTools = {
    root,
    dir,
    seconds: SECONDS,
    warmup: WARMUP,
    connections: CONNECTIONS,
    start: (env) => child(SERVER, env),
    stop: stopChild,
    serverEnv: serverEnvOf,
    cpuMs,
    line,
    keep
  }
  if (STORES.has("sqlite")) {
    if (ofStore) await measureStore("sqlite", receiver)
    if (ONLY.has("growth")) await measureGrowth(growth, "sqlite")
    if (ONLY.has("expired")) await measureExpired(growth)
  }
  if (process.env.DATABASE_URL && STORES.has("postgres")) {
    console.log(`# ${await pgSettings(process.env.DATABASE_URL)}`)
    if (ofStore) await measureStore("postgres", receiver)
    if (ONLY.has("growth")) await measureGrowth(growth, "postgres")
  } else console.log("# PostgreSQL figures: set DATABASE_URL (a server where this role may CREATE DATABASE)")
  printBudget()
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
