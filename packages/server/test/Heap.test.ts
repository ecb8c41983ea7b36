import { describe, expect, it } from "vitest"
import { HEAP_GROWING_PERCENT, heapFlag } from "../src/Heap.js"

describe("the server's heap growth", () => {
  it("is set at start when the operator chose none", () => {
    expect(heapFlag([])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
    expect(heapFlag(["--enable-source-maps", "--max-old-space-size=512"])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  })

  it("is the operator's where node's command line names it, however spelt", () => {
    expect(heapFlag(["--heap-growing-percent=300"])).toBeUndefined()
    expect(heapFlag(["--max-old-space-size=512", "--heap_growing_percent=50"])).toBeUndefined()
    expect(heapFlag(["--heap-growing-percent", "30"])).toBeUndefined()
  })
})
