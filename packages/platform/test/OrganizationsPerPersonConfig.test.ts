import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { PlatformConfig } from "../src/index.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(PlatformConfig.platform).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  ))

describe("ORGANIZATIONS_PER_PERSON", () => {
  it("defaults to 10, is read from the environment, and must be a non-negative integer", () => {
    const defaults = read({})
    expect(Either.isRight(defaults) && defaults.right.settings?.organizationsPerPerson).toBe(10)
    const set = read({ ORGANIZATIONS_PER_PERSON: "3" })
    expect(Either.isRight(set) && set.right.settings?.organizationsPerPerson).toBe(3)
    for (const value of ["-1", "two", "1.5"]) {
      const bad = read({ ORGANIZATIONS_PER_PERSON: value })
      expect(Either.isLeft(bad) && PlatformConfig.describe(bad.left), value).toMatch(/ORGANIZATIONS_PER_PERSON/)
    }
  })
})
