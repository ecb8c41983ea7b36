/**
 * The `growth` figure (BENCH_ONLY=growth): what a consent write and the reads that must not
 * depend on an organization's size cost when it already holds 10,000, 100,000 or 1,000,000
 * consent events (BENCH_GROWTH; 100,000 on PostgreSQL, BENCH_GROWTH_POSTGRES), each as a ratio
 * to the same figure on an organization that held none. Every stored event is of a new user,
 * with a webhook subscribed, so the users, the consent log and the outbox grow with it.
 *
 * The stores are seeded by `seed.ts` through core's write path (no HTTP, which would take hours
 * for a million) and kept between runs: a SQLite file under BENCH_GROWTH_CACHE (bench/.cache),
 * a PostgreSQL template database on the server at DATABASE_URL, both named by the number of
 * migrations and the size, so a schema change seeds again. Each run measures a copy: the cache
 * is never written by a measurement.
 *
 * One server per size (the empty store's too), all started at once on their copies; each figure
 * is measured on every size in turn, BENCH_GROWTH_ROUNDS rounds in alternating order, so a ratio
 * compares loads a minute or so apart. In this order, each on the smallest store it can be:
 * - the reads, once every store has 100 more events (the empty store's page of users):
 *   `GET /v1/consents/users/:id` of users spread over the store; a page of 100 consent users,
 *   newest first (`$limit=100&$sort[created_at]=-1`), and the first page by cursor
 *   (`$limit=100&$cursor=`); `GET /v1/webhooks/deliveries/stats?organization_id=`;
 * - the log, once every store has 5,000 more events (the empty store's log), sent one at a time:
 *   `GET /v1/consents/log/verify`, the CPU per 1,000 entries. Every entry is then one event's,
 *   the seeded ones too (seeded one at a time): an entry of several events (a group commit's)
 *   costs more;
 * - ingest: the CPU a consent event costs, loaded as the `events` figure loads it.
 * A figure is CPU per answer: the server's, and on PostgreSQL its database backends' too (where
 * a read that grows with the store spends its time). A read's is measured over a fixed number of
 * requests (as many as its warm-up load answered in BENCH_SECONDS), every answer waited for: a
 * duration would end with slow requests half served, their CPU counted and their answers not.
 */
import autocannon from "autocannon"
import Database from "better-sqlite3"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import pg from "pg"

/** Bumped when `seed.ts` writes something else: the stores seeded before are not used again. */
const SEED_VERSION = 1
/**
 * PostgreSQL's seeds: 2 since its transactions commit in groups too, so that its seed is written
 * one event at a time (each an entry of its own), as SQLite's is.
 */
const SEED_VERSION_POSTGRES = 2
/** A figure is kept in the budget within this ratio to the empty store's. */
const TARGET = 1.2
/** Rounds of every figure, in turns over the sizes (BENCH_GROWTH_ROUNDS). */
const ROUNDS = Number(process.env.BENCH_GROWTH_ROUNDS ?? 2)
/** Events each store gets over HTTP before its reads: the empty store's page of users. */
const READ_EVENTS = 100
/** Events each store has got over HTTP when its log is verified (the empty store's log), one at a time. */
const VERIFY_EVENTS = 5000

export interface GrowthServer {
  readonly proc: ChildProcess
  readonly first: Record<string, unknown>
}

/** What the bench's runner lends: its settings, its child processes and its output. */
export interface GrowthTools {
  readonly root: string
  /** The run's temporary directory, removed at exit. */
  readonly dir: string
  readonly seconds: number
  readonly warmup: number
  readonly connections: number
  readonly start: (env: Record<string, string>) => Promise<GrowthServer>
  readonly stop: (server: GrowthServer) => Promise<unknown>
  readonly serverEnv: (sqlitePath: string, databaseUrl: string | undefined) => Record<string, string>
  readonly cpuMs: (pid: number) => number
  readonly line: (name: string, value: number, unit: string, ratio?: string) => void
  readonly keep: (name: string, value: number, unit: string, target: number) => void
}

/** What `seed.ts` answers, kept beside the seeded store. */
interface Seed {
  readonly organization_id: string
  readonly key_id: string
  readonly key_secret: string
  /** Users spread evenly over the store, for the keyed reads. */
  readonly users: ReadonlyArray<string>
  readonly seeded: number
  readonly verified: number
  readonly verification: { readonly entries: number; readonly valid: boolean }
}

type Store = "sqlite" | "postgres"

const sizesOf = (value: string | undefined, fallback: string) =>
  [...new Set((value ?? fallback).split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0))].sort((a, b) => a - b)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The migrations a store runs: a new one changes the schema, and the seeded stores with it. */
export const migrationCount = (root: string) =>
  fs.readdirSync(path.join(root, "packages/store-sql/src/migrations")).filter((f) => /^\d{4}_.*\.ts$/.test(f)).length

/** Runs a seeding script of `bench/` to the end and answers its last line that is not a log line. */
export const runSeeder = <A>(root: string, script: string, env: Record<string, string>) =>
  new Promise<A>((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", path.join(root, "bench", script)], {
      cwd: path.join(root, "bench"),
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const kill = () => proc.kill("SIGKILL")
    process.on("exit", kill)
    let out = ""
    proc.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    proc.once("exit", (code) => {
      process.off("exit", kill)
      const answer = out.split("\n").filter((l) => l.startsWith("{") && !l.includes("\"logLevel\"")).at(-1)
      if (code !== 0 || answer === undefined) reject(new Error(`bench: ${script} exited with ${code}`))
      else resolve(JSON.parse(answer) as A)
    })
  })

const seedLine = (tools: GrowthTools, store: Store, size: number, seed: Seed, cached: boolean) =>
  tools.line(
    `growth_seed_${store}_${size}`,
    seed.seeded,
    "s",
    `${(size / seed.seeded).toFixed(0)} events/s through core's write path; the log's ${seed.verification.entries} entries ` +
      `verified valid in ${seed.verified.toFixed(1)} s${cached ? "; cached, copied for this run" : ""}`
  )

const checked = (seed: Seed, size: number) => {
  if (seed.verification.valid !== true) throw new Error(`growth: the seeded log of ${size} events does not verify: ${JSON.stringify(seed.verification)}`)
  return seed
}

/**
 * A copy (in the run's directory) of the seeded SQLite file `name` of the cache, seeded first by
 * `seed(target)` if the cache has none: the seeder's answer is kept beside it.
 */
export const cachedSqlite = async <S>(tools: GrowthTools, name: string, seed: (target: string) => Promise<S>) => {
  const cache = path.resolve(process.env.BENCH_GROWTH_CACHE ?? path.join(tools.root, "bench/.cache"))
  const file = path.join(cache, `${name}.db`)
  const meta = file.replace(/\.db$/, ".json")
  const cached = fs.existsSync(file) && fs.existsSync(meta)
  if (!cached) {
    fs.mkdirSync(cache, { recursive: true })
    const seeding = `${file}.seeding-${process.pid}`
    const rmSeeding = () => {
      for (const f of [seeding, `${seeding}-wal`, `${seeding}-shm`]) fs.rmSync(f, { force: true })
    }
    rmSeeding()
    process.on("exit", rmSeeding)
    const answer = await seed(seeding)
    // The whole database in one file, which is what is copied.
    const db = new Database(seeding)
    db.pragma("wal_checkpoint(TRUNCATE)")
    db.close()
    fs.writeFileSync(meta, `${JSON.stringify(answer)}\n`)
    fs.renameSync(seeding, file)
    process.off("exit", rmSeeding)
  }
  const copy = path.join(tools.dir, `${name}.db`)
  fs.copyFileSync(file, copy)
  return { seed: JSON.parse(fs.readFileSync(meta, "utf8")) as S, cached, copy }
}

/** A copy of the seeded SQLite file of this size, seeded first if the cache has none. */
const sqliteCopy = async (tools: GrowthTools, size: number) => {
  const { seed, cached, copy } = await cachedSqlite(tools, `growth-sqlite-m${migrationCount(tools.root)}-v${SEED_VERSION}-n${size}`, async (target) =>
    checked(await runSeeder<Seed>(tools.root, "seed.ts", { GROWTH_STORE: "sqlite", GROWTH_TARGET: target, GROWTH_EVENTS: String(size) }), size))
  return { seed, cached, env: tools.serverEnv(copy, undefined), database: undefined, drop: async () => fs.rmSync(copy, { force: true }) }
}

const withClient = async <A>(url: string, f: (c: pg.Client) => Promise<A>) => {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return await f(c)
  } finally {
    await c.end()
  }
}

const databaseUrl = (base: string, name: string) => {
  const u = new URL(base)
  u.pathname = `/${name}`
  return u.toString()
}

/** Dropped when the bench exits, however it exits. */
const dropAtExit = (base: string, name: string) =>
  process.on("exit", () => {
    spawn("psql", [base, "-qc", `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`], { stdio: "ignore", detached: true })
  })

/**
 * A copy of the seeded PostgreSQL database of this size (CREATE DATABASE … TEMPLATE), seeded first
 * if the server has none. The seed's answer is the template's comment, so the cache is the
 * database alone.
 */
const postgresCopy = async (tools: GrowthTools, base: string, size: number) => {
  const template = `cmp_bench_growth_m${migrationCount(tools.root)}_v${SEED_VERSION_POSTGRES}_n${size}`
  const described = await withClient(base, (c) =>
    c.query<{ comment: string | null }>("SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1", [template]))
  let comment = described.rows[0]?.comment ?? null
  const cached = comment !== null
  if (!cached) {
    const seeding = `${template}_seeding_${process.pid}`
    await withClient(base, async (c) => {
      // A template left without its comment was not seeded to the end.
      await c.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`)
      await c.query(`DROP DATABASE IF EXISTS "${seeding}" WITH (FORCE)`)
      await c.query(`CREATE DATABASE "${seeding}"`)
    })
    dropAtExit(base, seeding)
    const seed = checked(
      await runSeeder<Seed>(tools.root, "seed.ts", { GROWTH_STORE: "postgres", GROWTH_TARGET: databaseUrl(base, seeding), GROWTH_EVENTS: String(size) }),
      size
    )
    comment = JSON.stringify(seed)
    await withClient(base, async (c) => {
      await c.query(`COMMENT ON DATABASE "${seeding}" IS ${c.escapeLiteral(comment!)}`)
      await c.query(`ALTER DATABASE "${seeding}" RENAME TO "${template}"`)
    })
  }
  const copy = `cmp_bench_growth_run_${process.pid}_${size}`
  dropAtExit(base, copy)
  await withClient(base, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${copy}" WITH (FORCE)`)
    // Another run copying the same template at this moment holds it for a second or two.
    for (let attempt = 0; ; attempt++) {
      try {
        await c.query(`CREATE DATABASE "${copy}" TEMPLATE "${template}"`)
        return
      } catch (e) {
        if ((e as { code?: string }).code !== "55006" || attempt >= 30) throw e
        await sleep(1000)
      }
    }
  })
  // The planner's statistics, as autovacuum (or, where it is off, the schedule docs/operating.md
  // asks for) would have gathered them for a table this size. A copy has none: with none, the
  // planner took a keyset page of 500 events for 157 rows, and read every row after the page's
  // start to sort them, so a log verify of 100,000 entries read its tables 200 times over.
  await withClient(databaseUrl(base, copy), (c) => c.query("ANALYZE"))
  return {
    seed: JSON.parse(comment!) as Seed,
    cached,
    env: tools.serverEnv("", databaseUrl(base, copy)),
    // Its backends' CPU is read from /proc: only where PostgreSQL runs on this machine.
    database: { base, name: copy, local: ["127.0.0.1", "localhost", "[::1]", ""].includes(new URL(base).hostname) },
    drop: () => withClient(base, (c) => c.query(`DROP DATABASE IF EXISTS "${copy}" WITH (FORCE)`))
  }
}

/** The answer of a GET, waited for however long it takes (a verify of a large log takes minutes). */
const getJson = (url: string, token: string) =>
  new Promise<Record<string, unknown>>((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`GET ${url}: ${res.statusCode} ${body}`))))
    })
    req.on("error", reject)
  })

interface Run {
  readonly size: number
  readonly seed: Seed
  readonly server: GrowthServer
  readonly pid: number
  readonly url: string
  readonly token: string
  readonly drop: () => Promise<unknown>
  /** The PostgreSQL database the server runs on, whose backends' CPU is counted with the server's. */
  readonly database: { readonly base: string; readonly name: string; readonly local: boolean } | undefined
  /** Users the loads created, for the keyed reads of the empty store. */
  readonly created: Array<string>
}

interface Measured {
  readonly value: number
  readonly detail: string
}

let sequence = 0
const consents = { purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false }], vendors: { enabled: ["v1"] } }

export const measureGrowth = async (tools: GrowthTools, store: Store) => {
  const base = process.env.DATABASE_URL
  const sizes = [0, ...(store === "sqlite" ? sizesOf(process.env.BENCH_GROWTH, "10000,100000,1000000") : sizesOf(process.env.BENCH_GROWTH_POSTGRES, "100000"))]
  const runs: Array<Run> = []
  const copies: Array<Awaited<ReturnType<typeof sqliteCopy | typeof postgresCopy>>> = []
  try {
    // Every store seeded before any server starts: a seed takes up to an hour, longer than the
    // session of a server started before it lives (its token would be refused by then).
    for (const size of sizes) {
      const copy = store === "sqlite" ? await sqliteCopy(tools, size) : await postgresCopy(tools, base!, size)
      copies.push(copy)
      if (size > 0) seedLine(tools, store, size, copy.seed, copy.cached)
    }
    for (const [i, size] of sizes.entries()) {
      const copy = copies[i]!
      const server = await tools.start(copy.env)
      const url = String(server.first.url)
      const session = await fetch(`${url}/v1/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "api-key", key: copy.seed.key_id, secret: copy.seed.key_secret })
      })
      const token = String(((await session.json()) as { access_token?: unknown }).access_token)
      runs.push({ size, seed: copy.seed, server, pid: server.proc.pid!, url, token, drop: copy.drop, database: copy.database, created: [] })
    }
    await measureAll(tools, store, runs)
  } finally {
    for (const r of runs) await tools.stop(r.server)
    for (const c of copies) await c.drop()
  }
}

/**
 * The CPU used so far by the server and, on PostgreSQL, by each backend serving its database:
 * a read that grows with the store spends its time there, not in the server.
 */
const snapshot = async (tools: GrowthTools, r: Run) => {
  const server = tools.cpuMs(r.pid)
  const backends = new Map<number, number>()
  if (r.database?.local) {
    const { rows } = await withClient(r.database.base, (c) =>
      c.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [r.database!.name]))
    for (const { pid } of rows) {
      try {
        backends.set(pid, tools.cpuMs(pid))
      } catch {
        // A backend that ended meanwhile.
      }
    }
  }
  return { server, backends }
}

const spent = (before: Awaited<ReturnType<typeof snapshot>>, after: Awaited<ReturnType<typeof snapshot>>) => {
  let database = 0
  // A backend the pool opened during the load counts from its start.
  for (const [pid, ms] of after.backends) database += ms - (before.backends.get(pid) ?? 0)
  return { server: after.server - before.server, database }
}

/** A load, and the CPU per 2xx answer the server (with its database's backends) spent on it. */
const withCpu = async <A extends { readonly "2xx": number }>(tools: GrowthTools, r: Run, load: () => Promise<A>) => {
  const before = await snapshot(tools, r)
  const result = await load()
  const { database, server } = spent(before, await snapshot(tools, r))
  const answers = Math.max(1, result["2xx"])
  const inDatabase = r.database?.local ? `, ${(database / answers).toFixed(2)} ms of it in PostgreSQL` : ""
  return { result, cpu: (server + database) / answers, inDatabase }
}

/** Waits until the server and its database have finished what a load left them (requests the load gave up on). */
const quiet = async (tools: GrowthTools, r: Run) => {
  let last = await snapshot(tools, r)
  for (let i = 0; i < 3000; i++) {
    await sleep(200)
    const now = await snapshot(tools, r)
    const { database, server } = spent(last, now)
    if (server + database <= 10) return
    last = now
  }
}

const errorsOf = (r: autocannon.Result) => r.non2xx + r.errors + r.timeouts

const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / values.length

const consentEvent = (r: Run) =>
  JSON.stringify({ organization_id: r.seed.organization_id, user: { organization_user_id: `growth-${process.pid}-${sequence++}` }, consents })

/** Consent events of new users, as the `events` figure sends them; the users they made are kept for the keyed reads. */
const postEvents = (tools: GrowthTools, r: Run, load: { duration: number } | { amount: number; connections: number; timeout: number }) =>
  autocannon({
    url: r.url,
    connections: tools.connections,
    requests: [{
      method: "POST",
      path: "/v1/consents/events",
      headers: { "content-type": "application/json", authorization: `Bearer ${r.token}` },
      setupRequest: (req) => ({ ...req, body: consentEvent(r) }),
      onResponse: (status, body) => {
        if (status === 201 && r.created.length < 100) r.created.push(String((JSON.parse(body) as { user: { id: string } }).user.id))
      }
    }],
    ...load
  })

/** The server's CPU per answer to a fixed number of GETs, as many as a warm-up load answered in BENCH_SECONDS. */
const read = async (tools: GrowthTools, r: Run, next: () => string): Promise<Measured> => {
  const load = (options: { duration: number } | { amount: number }) =>
    autocannon({
      url: r.url,
      connections: tools.connections,
      // A read that grows with the store can take long at a million: waited for, not an error.
      timeout: 600,
      headers: { authorization: `Bearer ${r.token}` },
      requests: [{ method: "GET", path: "/", setupRequest: (req) => ({ ...req, path: next() }) }],
      ...options
    })
  const warmup = Math.max(1, tools.warmup)
  const warm = await load({ duration: warmup })
  await quiet(tools, r)
  const amount = Math.max(tools.connections, Math.round((warm["2xx"] / warmup) * tools.seconds))
  const started = performance.now()
  const { cpu, inDatabase, result } = await withCpu(tools, r, () => load({ amount }))
  const wall = (performance.now() - started) / 1000
  if (result["2xx"] === 0) throw new Error(`growth: ${next()} answered no 2xx on ${r.size} events`)
  return {
    value: cpu,
    detail: `${(result["2xx"] / wall).toFixed(0)} req/s, p99 ${result.latency.p99} ms, ${errorsOf(result)} errors${inDatabase}`
  }
}

/** The whole log verified once: its entries, and the CPU the verify took. */
const verifyOnce = async (tools: GrowthTools, r: Run) => {
  await quiet(tools, r)
  const { cpu, result } = await withCpu(tools, r, async () => ({ "2xx": 1, answer: await getJson(`${r.url}/v1/consents/log/verify`, r.token) }))
  const { answer } = result
  if (answer.valid !== true) throw new Error(`growth: the log of ${r.size} events does not verify: ${JSON.stringify(answer)}`)
  return { entries: Number(answer.entries), cpu }
}

/**
 * The log verified whole, again until the verifies have taken 2 s of CPU (at most 10 times): the
 * CPU per 1,000 entries. One verify of a small log takes a tenth of a second, and its CPU swings
 * by half from one to the next (garbage collection).
 */
const verifyLog = async (tools: GrowthTools, r: Run): Promise<Measured> => {
  let cpu = 0
  let entries = 0
  let times = 0
  const started = performance.now()
  while (times < 10 && cpu < 2000) {
    const once = await verifyOnce(tools, r)
    cpu += once.cpu
    entries += once.entries
    times++
  }
  const each = (performance.now() - started) / 1000 / times
  return {
    value: cpu / (entries / 1000),
    detail: `${entries / times} entries, valid, verified ${times} times, ${each.toFixed(1)} s and ${(cpu / times / 1000).toFixed(2)} s of CPU each`
  }
}

/** How many consent users (as many as events: each event made one) the organization holds now. */
const usersNow = async (r: Run) => Number((await getJson(`${r.url}/v1/consents/users?$limit=1`, r.token)).total)

const measureAll = async (tools: GrowthTools, store: Store, runs: ReadonlyArray<Run>) => {
  const report = (figure: string, unit: string, measured: ReadonlyArray<Measured>) => {
    const empty = measured[0]!.value
    runs.forEach((r, i) => {
      const m = measured[i]!
      const name = `growth_${figure}_${store}_${r.size}`
      if (r.size === 0) return tools.line(name, m.value, unit, `the empty store; ${m.detail}`)
      const ratio = m.value / empty
      tools.line(name, m.value, unit, `${ratio.toFixed(2)}x the empty store's; ${m.detail}`)
      tools.keep(name, ratio, "x", TARGET)
    })
  }
  /** Every size measured ROUNDS times, the order reversed each round, so no size always follows another; the mean is kept. */
  const inTurns = async (measure: (r: Run, round: number) => Promise<Measured>): Promise<Array<Measured>> => {
    const got = runs.map((): Array<Measured> => [])
    for (let round = 0; round < ROUNDS; round++) {
      const order = runs.map((_, i) => (round % 2 === 0 ? i : runs.length - 1 - i))
      for (const i of order) got[i]!.push(await measure(runs[i]!, round))
    }
    return got.map((ms) => ({
      value: mean(ms.map((m) => m.value)),
      detail: ms.length === 1 ? ms[0]!.detail : `rounds ${ms.map((m) => m.value.toFixed(2)).join(", ")}; the last ${ms.at(-1)!.detail}`
    }))
  }

  // Events of new users over HTTP, one at a time, so that each is an entry of its own (the loads
  // of the ingest send 50 at once, whose events share entries: group commit).
  const send = async (events: number) => {
    for (const r of runs) {
      // Every answer waited for: one given up on may have been written all the same.
      const sent = await postEvents(tools, r, { amount: events, connections: 1, timeout: 600 })
      if (sent["2xx"] !== events) {
        throw new Error(`growth: ${errorsOf(sent)} of ${events} events failed: ${JSON.stringify(sent.statusCodeStats)}, ${sent.errors} errors`)
      }
    }
    return Promise.all(runs.map(usersNow))
  }
  const held = (counts: ReadonlyArray<number>, measured: ReadonlyArray<Measured>) =>
    measured.map((m, i) => ({ ...m, detail: `${m.detail}; ${counts[i]} events held` }))

  // The reads first, the empty store holding a page of users only.
  const reading = await send(READ_EVENTS)
  const each = async (figure: string, paths: (r: Run) => () => string) =>
    report(figure, "ms CPU per request", held(reading, await inTurns((r) => read(tools, r, paths(r)))))
  await each("get_user", (r) => {
    const users = r.seed.users.length > 0 ? r.seed.users : r.created
    let i = 0
    return () => `/v1/consents/users/${users[i++ % users.length]}`
  })
  await each("users_page", () => () => "/v1/consents/users?$limit=100&$sort[created_at]=-1")
  await each("users_cursor", () => () => "/v1/consents/users?$limit=100&$cursor=")
  await each("delivery_stats", (r) => () => `/v1/webhooks/deliveries/stats?organization_id=${r.seed.organization_id}`)

  // The log, each of its entries one event's: the seeded ones and those sent here.
  const verifying = await send(VERIFY_EVENTS - READ_EVENTS)
  // The verify's code is compiled by its first run, a visible share of a small log's figure and
  // none of a large one's: a first verify, unmeasured, where it takes little.
  for (const [i, r] of runs.entries()) if (verifying[i]! <= 100_000) await verifyOnce(tools, r)
  report("log_verify", "ms CPU per 1,000 entries", held(verifying, await inTurns((r) => verifyLog(tools, r))))

  // Ingest, as the `events` figure measures it: 50 connections, each event of a new user, after
  // the same load unmeasured for BENCH_WARMUP seconds.
  const ingest = await inTurns(async (r, round) => {
    if (round === 0 && tools.warmup > 0) await postEvents(tools, r, { duration: tools.warmup })
    await quiet(tools, r)
    const { cpu, inDatabase, result } = await withCpu(tools, r, () => postEvents(tools, r, { duration: tools.seconds }))
    return {
      value: cpu,
      detail: `${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, ${errorsOf(result)} errors${inDatabase}`
    }
  })
  report("ingest", "ms CPU per event", held(await Promise.all(runs.map(usersNow)), ingest))
}
