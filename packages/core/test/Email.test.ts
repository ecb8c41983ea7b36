import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { Email, isEmailAddress } from "../src/Domain/Common.js"

const decode = Schema.decodeUnknownEither(Email)

describe("Email", () => {
  it.each([
    "x@example.com",
    "first.last@example.com",
    "a@b.co",
    "user+tag@sub.example.org",
    "o'brien@example.ie",
    "x_y-z@ex-ample.com",
    "1234@123.example.com",
    "a@x.xn--p1ai",
    "!#$%&'*+/=?^_`{|}~-@example.com",
    `${"a".repeat(64)}@example.com`,
    `a@${"b".repeat(63)}.com`
  ])("accepts %s", (address) => {
    expect(isEmailAddress(address)).toBe(true)
    expect(Either.isRight(decode(address))).toBe(true)
  })

  it.each([
    "a@...!",
    "",
    "a",
    "@example.com",
    "a@",
    "a@b",
    "a@localhost",
    "a@b.c",
    "a@b.c0m",
    "a@example.com.",
    "a@.example.com",
    "a@example..com",
    "a@-example.com",
    "a@example-.com",
    "a@exa_mple.com",
    "a@1.2.3.4",
    "a@[127.0.0.1]",
    ".a@example.com",
    "a.@example.com",
    "a..b@example.com",
    "a b@example.com",
    " a@example.com",
    "a@example.com ",
    "a@b@example.com",
    "\"a\"@example.com",
    "a\n@example.com",
    "a@example.com\n",
    "jörg@example.de",
    "a@exämple.de",
    "a,b@example.com",
    "a(b)@example.com",
    `${"a".repeat(65)}@example.com`,
    `a@${"b".repeat(64)}.com`,
    `a@${Array.from({ length: 70 }, () => "bcd").join(".")}.com`
  ])("refuses %j", (address) => {
    expect(isEmailAddress(address)).toBe(false)
    const r = decode(address)
    expect(Either.isLeft(r)).toBe(true)
  })

  it("is at most 254 characters in all", () => {
    const labels = `${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.`
    const longest = `${"a".repeat(64)}@${labels}abcdef`
    expect(longest.length).toBe(254)
    expect(isEmailAddress(longest)).toBe(true)
    expect(isEmailAddress(`${"a".repeat(64)}@${labels}abcdefg`)).toBe(false)
  })
})
