import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { PlatformConfig } from "../src/index.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(PlatformConfig.platform).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  ))

describe("INVITATIONS_PER_HOUR", () => {
  it("defaults to 50, is read from the environment, and must be a positive integer", () => {
    const defaults = read({})
    expect(Either.isRight(defaults) && defaults.right.settings?.invitationsPerHour).toBe(50)
    const set = read({ INVITATIONS_PER_HOUR: "3" })
    expect(Either.isRight(set) && set.right.settings?.invitationsPerHour).toBe(3)
    for (const value of ["0", "-1", "two", "1.5"]) {
      const bad = read({ INVITATIONS_PER_HOUR: value })
      expect(Either.isLeft(bad) && PlatformConfig.describe(bad.left), value).toMatch(/INVITATIONS_PER_HOUR/)
    }
  })
})
