import * as Effect from "effect/Effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import * as LogLines from "../src/LogLines.js"

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("the platform's log lines", () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it("writes the lines of one turn of the event loop in one call, each a JSON object, in order", async () => {
    const calls: Array<string> = []
    vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => void calls.push(args.map(String).join(" ")))
    await Effect.runPromise(Effect.all([
      Effect.logInfo("first").pipe(Effect.annotateLogs({ requestId: "r-1" })),
      Effect.logWarning("second"),
      Effect.logError("third", "with a detail")
    ]).pipe(Effect.provide(LogLines.layer)))
    // Written once the turn is over, not before.
    expect(calls).toEqual([])
    await turn()
    await turn()
    expect(calls).toHaveLength(1)
    const lines = calls[0]!.split("\n").map((l) => JSON.parse(l) as { message: unknown; logLevel: string; annotations: Record<string, unknown> })
    expect(lines.map((l) => [l.message, l.logLevel])).toEqual([["first", "INFO"], ["second", "WARN"], [["third", "with a detail"], "ERROR"]])
    expect(lines[0]!.annotations).toEqual({ requestId: "r-1" })
  })

  it("writes the lines of a later turn in a call of their own", async () => {
    const calls: Array<string> = []
    vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => void calls.push(args.map(String).join(" ")))
    await Effect.runPromise(Effect.logInfo("one").pipe(Effect.provide(LogLines.layer)))
    await turn()
    await turn()
    await Effect.runPromise(Effect.logInfo("two").pipe(Effect.provide(LogLines.layer)))
    await turn()
    await turn()
    expect(calls.map((c) => (JSON.parse(c) as { message: string }).message)).toEqual(["one", "two"])
  })
})
