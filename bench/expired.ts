/**
 * The `expired` figure (BENCH_ONLY=expired, run only when named): how long a page of the users
 * to ask again takes on an organization of a million users (EXPIRED_USERS), on SQLite, through
 * the real server: `GET /v1/consents/users?consent_state=expired&$limit=1000&$cursor=…`, the
 * walk's pages one after another, each timed from the request to the last byte of its answer.
 * Prints the median and the p95 of EXPIRED_PAGES pages after EXPIRED_WARMUP unmeasured (the
 * target is 100 ms), then walks on to the end: the whole walk's time, and its slowest and last
 * pages (past the last expired user, a page reads the rest of the organization's users).
 *
 * The store is seeded by `seed-users.ts` (see there: a 12-month policy, last choices spread over
 * two years, about half expired) and kept between runs under BENCH_GROWTH_CACHE (bench/.cache),
 * named by the number of migrations, the seed's version and the size, so a schema change seeds
 * again. Each run measures a copy: the cache is never written by a measurement. The share of
 * expired users grows as a cached seed ages (its instants are fixed when it is made).
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { cachedSqlite, type GrowthTools, migrationCount, runSeeder } from "./growth.js"

/** Bumped when `seed-users.ts` writes something else: the stores seeded before are not used again. */
const SEED_VERSION = 1
const USERS = Number(process.env.EXPIRED_USERS ?? 1_000_000)
const PAGES = Number(process.env.EXPIRED_PAGES ?? 30)
const WARMUP = Number(process.env.EXPIRED_WARMUP ?? 3)
const TARGET_MS = 100

interface Seed {
  readonly organization_id: string
  readonly key_id: string
  readonly key_secret: string
  readonly users: number
  readonly seeded: number
  readonly at: string
}

/** A copy of the seeded file, seeded first if the cache has none. */
const seededCopy = (tools: GrowthTools) =>
  cachedSqlite(tools, `expired-sqlite-m${migrationCount(tools.root)}-v${SEED_VERSION}-n${USERS}`, (target) =>
    runSeeder<Seed>(tools.root, "seed-users.ts", { EXPIRED_TARGET: target, EXPIRED_USERS: String(USERS) }))

/** A GET's answer and how long it took, to its last byte. */
const timedGet = (url: string, token: string) =>
  new Promise<{ readonly ms: number; readonly body: Record<string, any> }>((resolve, reject) => {
    const started = performance.now()
    const req = http.get(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => {
        const ms = performance.now() - started
        if (res.statusCode === 200) resolve({ ms, body: JSON.parse(body) })
        else reject(new Error(`GET ${url}: ${res.statusCode} ${body}`))
      })
    })
    req.on("error", reject)
  })

const quantile = (sorted: ReadonlyArray<number>, q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

export const measureExpired = async (tools: GrowthTools) => {
  const { cached, copy, seed } = await seededCopy(tools)
  tools.line(
    `expired_seed_sqlite_${USERS}`,
    seed.seeded,
    "s",
    `${(USERS / seed.seeded).toFixed(0)} users/s by multi-row inserts, the triggers keeping their states; seeded ${seed.at}` +
      (cached ? "; cached, copied for this run" : "")
  )
  const server = await tools.start(tools.serverEnv(copy, undefined))
  try {
    const url = String(server.first.url)
    const session = await fetch(`${url}/v1/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "api-key", key: seed.key_id, secret: seed.key_secret })
    })
    const token = String(((await session.json()) as { access_token?: unknown }).access_token)
    // The whole walk, to its last page: the first PAGES after the warm-up are the figure, the
    // rest tell what a walk to the end costs (its last pages read past the last expired user).
    const times: Array<number> = []
    let cursor = ""
    let listed = 0
    let pages = 0
    const walkStarted = performance.now()
    for (;;) {
      const { body, ms } = await timedGet(`${url}/v1/consents/users?consent_state=expired&$limit=1000&$cursor=${encodeURIComponent(cursor)}`, token)
      for (const u of body.data as Array<{ consent_state: string }>) {
        if (u.consent_state !== "expired") throw new Error(`expired: a page listed a user in state ${u.consent_state}`)
      }
      if (pages >= WARMUP) times.push(ms)
      pages++
      listed += body.data.length
      if (body.cursor === null) {
        const walked = (performance.now() - walkStarted) / 1000
        const first = [...times.slice(0, PAGES)].sort((a, b) => a - b)
        const all = [...times].sort((a, b) => a - b)
        tools.line(`expired_page_median_sqlite`, quantile(first, 0.5), "ms", `${first.length} pages of 1,000 expired users after ${WARMUP} unmeasured, among ${USERS} users`)
        tools.line(`expired_page_p95_sqlite`, quantile(first, 0.95), "ms")
        tools.keep(`expired_page_p95_sqlite`, quantile(first, 0.95), " ms", TARGET_MS)
        tools.line(
          `expired_walk_sqlite`,
          walked,
          "s",
          `${pages} pages, ${listed} expired users; every page's median ${quantile(all, 0.5).toFixed(0)} ms, p95 ` +
            `${quantile(all, 0.95).toFixed(0)} ms, the slowest ${all.at(-1)!.toFixed(0)} ms, the last ${ms.toFixed(0)} ms`
        )
        break
      }
      cursor = body.cursor
    }
  } finally {
    await tools.stop(server)
    fs.rmSync(copy, { force: true })
  }
}
