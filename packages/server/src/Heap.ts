import * as v8 from "node:v8"

/**
 * How far V8 lets the old generation grow past what survived its last full collection, in
 * percent. Left to itself, V8 picks up to four times under a steady load of requests, each
 * leaving short-lived objects that outlive a young-generation collection: at 50 connections the
 * server's heap rose to about 160 MB, of which a full collection kept under 30, and its resident
 * memory to 280–290 MB. Twice (100 %) keeps it to about 225 MB, for about 2 % more CPU per
 * request, within the bench's noise (docs/benchmarks.md).
 */
export const HEAP_GROWING_PERCENT = 100

const named = /^--heap[-_]growing[-_]percent(=|$)/

/**
 * The flag the server sets at start, unless the operator chose the growth already on node's
 * command line (`node --heap-growing-percent=0 main.mjs` gives V8 its own choice back; node
 * refuses the flag in `NODE_OPTIONS`). Only the server's own process: a host embedding the
 * platform keeps its own settings.
 */
export const heapFlag = (execArgv: ReadonlyArray<string>): string | undefined =>
  execArgv.some((arg) => named.test(arg)) ? undefined : `--heap-growing-percent=${HEAP_GROWING_PERCENT}`

export const tuneHeap = () => {
  const flag = heapFlag(process.execArgv)
  // Read at every full collection, so it takes effect although the heap is already set up.
  if (flag !== undefined) v8.setFlagsFromString(flag)
}
