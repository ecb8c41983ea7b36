import { getMetricsFromIterator, type PromHistogramData, type PromMetrics } from "prom2javascript"
import { expect } from "vitest"
import { call } from "./helpers.js"

/** One series of a family: a counter's or gauge's value, or a histogram's count. */
interface Series {
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export type Scraped = PromMetrics

/** `GET /metrics` with the token, parsed by a Prometheus text parser (which fails on a malformed line). */
export const scrape = async (base: string, token: string): Promise<Scraped> => {
  const r = await call(base, "GET", "/metrics", { token })
  expect(r.status, r.text).toBe(200)
  expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
  return getMetricsFromIterator(r.text.split("\n")[Symbol.iterator]())
}

export const family = (scraped: Scraped, name: string) => {
  const found = scraped[name]
  expect(found, `metric ${name}`).toBeDefined()
  return found!
}

/** The series of a family whose labels include `labels` (a histogram's by its count). */
export const series = (scraped: Scraped, name: string, labels: Record<string, string> = {}): ReadonlyArray<Series> =>
  (family(scraped, name).data as ReadonlyArray<{ labels: Record<string, string>; value?: number }>)
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels[k] === v))
    .map((m) => ({ labels: m.labels, value: m.value ?? (m as unknown as PromHistogramData).count }))

/** The summed value of the matching series; 0 when none matches. */
export const valueOf = (scraped: Scraped, name: string, labels: Record<string, string> = {}): number =>
  series(scraped, name, labels).reduce((n, m) => n + m.value, 0)

/** Every label value of every series: what must never hold an id, a token or a raw path. */
export const labelValues = (scraped: Scraped): ReadonlyArray<string> =>
  Object.values(scraped).flatMap((f) => (f.data as ReadonlyArray<{ labels: Record<string, string> }>).flatMap((m) => Object.values(m.labels)))
