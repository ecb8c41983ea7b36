import { afterAll, beforeAll, vi } from "vitest"

/**
 * The lines a test file's servers write to the console (their JSON log), one entry a line, from a spy registered
 * when this is called: call it before `useServer`, so that the spy is on before the server starts
 * and off after it stops.
 */
export const consoleLines = (): Array<string> => {
  const lines: Array<string> = []
  beforeAll(() => {
    vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
      // The platform writes the lines of one turn of the event loop in one call.
      lines.push(...args.map(String).join(" ").split("\n"))
    })
  })
  afterAll(() => {
    vi.restoreAllMocks()
  })
  return lines
}
