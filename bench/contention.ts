/**
 * The `contention` figure (PostgreSQL): does a second server process on the same database cost
 * more than the load it takes? One process takes the consent-event load of the `default` figure
 * (BENCH_CONNECTIONS connections for BENCH_SECONDS), then two processes take the same load split
 * between them (half the connections each, at once, for the same organization, so their writes
 * meet on its consent log's chains and its outbox). Each is the default deployment (`pnpm start`:
 * its own dispatcher, the request log on), fresh, and warmed up alone with the whole load for
 * BENCH_WARMUP s, the warm-up's webhooks delivered before the load. The CPU of the process, or of both summed, over the load,
 * per 2xx answer, as the `events` figure reads it (the dispatchers deliver during the load too:
 * each commit wakes them); and, beside it, until the last webhook of the load has arrived (the
 * backlog's delivery, and each process's idle polls, then count too). BENCH_CONTENTION_ROUNDS (2)
 * rounds, the single process first in even rounds and the pair first in odd ones.
 *
 * Each load is then given, the same way, to the bare delivery (`baseline.ts` with its webhook:
 * an Express handler writing the event and its outbox message in one statement, then sending it
 * signed), one process and two on a database of their own. It has nothing two processes could
 * contend on but the tables they share, so its ratio is what two processes cost any server on
 * these 2 cores, shared with the database and the load generator. Printed beside the figure, with the server's ratio over it; the budget keeps the
 * server's own ratio.
 *
 * Printed: the pair's CPU per event over the single process's (means over the rounds), until
 * the load's last webhook arrived and, beside it, over the load alone; each round's figures,
 * errors (every answer must be a 2xx) and webhooks (every one must arrive within a minute after
 * the load). Kept in the budget: the ratio until delivered, target 1.1, and the answers that
 * were not 2xx with the webhooks that did not arrive, target 0. Until delivered, as the `default`
 * figure is read: one process falls further behind in its deliveries under the whole load than
 * each of two does under half of it, so over the load alone the single process's figure left
 * out more of its deliveries (2.0–2.2 s of backlog after the load, against 0.8–0.9 s).
 */
import type autocannon from "autocannon"
import type { ChildProcess } from "node:child_process"
import type * as readline from "node:readline"

export interface Child {
  readonly proc: ChildProcess
  readonly first: Record<string, any>
  readonly lines: readline.Interface
}

/** What the figure takes of `bench.ts`: its helpers and settings. */
export interface Bench {
  /** Starts the server bundle with this environment. */
  readonly start: (env: Record<string, string>) => Promise<Child>
  /**
   * Starts the bare delivery (`baseline.ts` with its webhook to the receiver) on this PostgreSQL
   * database: the least a delivering server spends, to load alone and in pairs as the server is.
   */
  readonly startBare: (database: string, receiver: Child) => Promise<Child>
  /** A fresh database on the bench's PostgreSQL server, dropped at exit. */
  readonly database: (name: string) => Promise<string>
  readonly stop: (c: Child) => Promise<unknown>
  readonly ask: <A = Record<string, number>>(c: Child, question?: string) => Promise<A>
  readonly postEvents: (
    url: string,
    headers: Record<string, string>,
    body: () => string,
    options: { onCreated?: (id: string) => void; seconds?: number; connections?: number }
  ) => Promise<autocannon.Result>
  readonly cpuMs: (pid: number) => number
  readonly line: (name: string, value: number, unit: string, ratio?: string) => void
  readonly keep: (name: string, value: number, unit: string, target: number, stretch?: number) => void
  readonly seconds: number
  readonly warmup: number
  readonly connections: number
}

const ROUNDS = Number(process.env.BENCH_CONTENTION_ROUNDS ?? 2)
/** How long after the load every webhook of it must have arrived. */
const DELIVERED_WITHIN_MS = 60_000

interface Tenant {
  readonly headers: Record<string, string>
  readonly body: () => string
}

interface Measured {
  readonly cpuPerEvent: number
  /** The same until the load's last webhook arrived. */
  readonly cpuPerDelivered: number
  readonly events: number
  readonly errors: number
  readonly missing: number
  /** Seconds from the load's end to the last webhook's arrival. */
  readonly lastAfter: number
}

/** Waits until every id of `created` has arrived at the receiver, or `withinMs` after `since`; answers how many did not, and when the last did. */
const arrivals = async (b: Bench, receiver: Child, created: ReadonlySet<string>, since: number, withinMs: number) => {
  let arrived = new Map<string, number>()
  const missing = () => [...created].filter((id) => !arrived.has(id)).length
  do {
    await new Promise((r) => setTimeout(r, 250))
    arrived = new Map(await b.ask<Array<[string, number]>>(receiver, "arrivals"))
  } while (missing() > 0 && Date.now() - since < withinMs)
  const last = Math.max(since, ...[...created].flatMap((id) => (arrived.has(id) ? [arrived.get(id)!] : [])))
  return { missing: missing(), lastAfter: (last - since) / 1000 }
}

/** `processes` fresh servers (`start`), warmed up, taking the load split between them; stopped after. */
const measure = async (b: Bench, start: () => Promise<Child>, receiver: Child, tenant: Tenant, processes: number): Promise<Measured> => {
  const servers = await Promise.all(Array.from({ length: processes }, start))
  try {
    const share = (i: number) => Math.floor(b.connections / processes) + (i < b.connections % processes ? 1 : 0)
    const load = async (seconds: number, onCreated: (id: string) => void) =>
      Promise.all(servers.map((s, i) =>
        b.postEvents(s.first.url as string, tenant.headers, tenant.body, { seconds, connections: share(i), onCreated })))
    // Each process alone takes the whole load for the warm-up, one after the other: each of the
    // pair then runs code as compiled as the single process's (half the warm-up each would leave
    // the pair's code less optimised, and count the JIT compiler's work against it).
    for (const s of b.warmup > 0 ? servers : []) {
      const warm = new Set<string>()
      await b.postEvents(s.first.url as string, tenant.headers, tenant.body, { seconds: b.warmup, connections: b.connections, onCreated: (id) => warm.add(id) })
      await arrivals(b, receiver, warm, Date.now(), DELIVERED_WITHIN_MS)
    }
    await b.ask(receiver, "reset")
    const created = new Set<string>()
    const before = servers.map((s) => b.cpuMs(s.proc.pid!))
    const cpuSince = () => servers.reduce((sum, s, i) => sum + b.cpuMs(s.proc.pid!) - before[i]!, 0)
    const results = await load(b.seconds, (id) => created.add(id))
    const ended = Date.now()
    const loaded = cpuSince()
    const delivered = await arrivals(b, receiver, created, ended, DELIVERED_WITHIN_MS)
    const events = results.reduce((sum, r) => sum + r["2xx"], 0)
    return {
      cpuPerEvent: loaded / Math.max(1, events),
      cpuPerDelivered: cpuSince() / Math.max(1, events),
      events,
      errors: results.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
      ...delivered
    }
  } finally {
    for (const s of servers) await b.stop(s)
  }
}

export const measureContention = async (
  b: Bench,
  /** The environment of `pnpm start` on the bench's PostgreSQL database. */
  env: Record<string, string>,
  receiver: Child,
  tenant: Tenant & { readonly undelivered: number }
) => {
  // What earlier figures queued is delivered first, by a server of its own, so no round pays for it.
  if (tenant.undelivered > 0) {
    await b.ask(receiver, "reset")
    const drain = await b.start(env)
    let got = await b.ask(receiver)
    for (const started = Date.now(); got.count! < tenant.undelivered && Date.now() - started < 180_000;) {
      await new Promise((r) => setTimeout(r, 250))
      got = await b.ask(receiver)
    }
    await b.stop(drain)
  }
  const single: Array<Measured> = []
  const pair: Array<Measured> = []
  const bareSingle: Array<Measured> = []
  const barePair: Array<Measured> = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const processes of round % 2 === 0 ? [1, 2] : [2, 1]) {
      const m = await measure(b, () => b.start(env), receiver, tenant, processes)
      ;(processes === 1 ? single : pair).push(m)
      // The bare delivery the same way, each load on a database of its own that its processes share.
      const database = await b.database(`cmp_bench_bare_pair_${process.pid}_${round}_${processes}`)
      const bare = await measure(b, () => b.startBare(database, receiver), receiver, tenant, processes)
      ;(processes === 1 ? bareSingle : barePair).push(bare)
    }
  }
  const mean = (ms: Array<Measured>, of: (m: Measured) => number) => ms.reduce((sum, m) => sum + of(m), 0) / ms.length
  const describe = (ms: Array<Measured>) =>
    ms.map((m) =>
      `${m.cpuPerEvent.toFixed(2)} ms (${m.cpuPerDelivered.toFixed(2)} ms until delivered; ${m.events} events, ${m.errors} errors, ` +
      `${m.events - m.missing}/${m.events} webhooks, the last ${m.lastAfter.toFixed(1)} s after)`
    ).join("; ")
  const overLoad = mean(pair, (m) => m.cpuPerEvent) / mean(single, (m) => m.cpuPerEvent)
  const ratio = mean(pair, (m) => m.cpuPerDelivered) / mean(single, (m) => m.cpuPerDelivered)
  b.line(
    "consent_events_two_processes_postgres",
    ratio,
    "x one process's CPU per event until delivered",
    `${overLoad.toFixed(2)}x over the load alone; two processes ${describe(pair)}; one process ${describe(single)}; ` +
      `${ROUNDS} rounds of ${b.seconds} s, ${b.connections} connections in all`
  )
  // What two processes cost a server that does the least on these cores (each of the pair and
  // the load generator sharing them with the database): the part of the ratio above that is the
  // machine's, not contention in the store.
  const bareRatio = mean(barePair, (m) => m.cpuPerDelivered) / mean(bareSingle, (m) => m.cpuPerDelivered)
  b.line(
    "consent_events_two_processes_bare_postgres",
    bareRatio,
    "x the bare delivery's one process's CPU per event until delivered",
    `the server's ratio is ${(ratio / bareRatio).toFixed(2)}x this; two processes ${describe(barePair)}; one process ${describe(bareSingle)}`
  )
  const errors = [...single, ...pair].reduce((sum, m) => sum + m.errors, 0)
  const missing = [...single, ...pair].reduce((sum, m) => sum + m.missing, 0)
  if (errors > 0) console.log(`# consent_events_two_processes_postgres: ${errors} answers were not 2xx`)
  if (missing > 0) console.log(`# consent_events_two_processes_postgres: ${missing} webhooks had not arrived a minute after their load`)
  b.keep("two_processes_cpu_ratio_postgres", ratio, "x", 1.1)
  b.keep("two_processes_failures_postgres", errors + missing, " (answers not 2xx, webhooks not arrived)", 0)
}
