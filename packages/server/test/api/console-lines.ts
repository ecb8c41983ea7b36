import { afterAll, beforeAll, vi } from "vitest"

/**
 * The lines a test file's servers write to the console (their JSON log), from a spy registered
 * when this is called: call it before `useServer`, so that the spy is on before the server starts
 * and off after it stops.
 */
export const consoleLines = (): Array<string> => {
  const lines: Array<string> = []
  beforeAll(() => {
    vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
      lines.push(args.map(String).join(" "))
    })
  })
  afterAll(() => {
    vi.restoreAllMocks()
  })
  return lines
}
