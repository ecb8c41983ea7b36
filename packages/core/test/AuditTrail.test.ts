import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { auditPrincipalOf, fieldNames, fromAddress, RequestAddress } from "../src/Engine/AuditTrail.js"

describe("audit trail", () => {
  it("names who stands behind each principal: a key, a person, an integration, the host", () => {
    expect(auditPrincipalOf({ _tag: "Operator", keyId: "k1", organizationId: "op" })).toEqual({ kind: "api_key", id: "k1" })
    expect(auditPrincipalOf({ _tag: "Client", keyId: "k2", organizationId: "o" })).toEqual({ kind: "api_key", id: "k2" })
    expect(auditPrincipalOf({ _tag: "Client", keyId: "i1", organizationId: "o", via: "integration" })).toEqual({ kind: "integration", id: "i1" })
    expect(auditPrincipalOf({ _tag: "Client", keyId: "in-process", organizationId: "o", via: "in-process" })).toEqual({ kind: "host", id: "in-process" })
    expect(auditPrincipalOf({ _tag: "Operator", keyId: "domain-release", organizationId: "op", via: "in-process" })).toEqual({
      kind: "host",
      id: "domain-release"
    })
    expect(auditPrincipalOf({ _tag: "Member", personId: "p1", organizationIds: ["o"] })).toEqual({ kind: "member", id: "p1" })
  })

  it("field names: sorted, once each, without the columns every write moves", () => {
    expect(fieldNames(["url", "auth", "updated_at", "version", "id", "created_at", "url"])).toEqual(["auth", "url"])
  })

  it.effect("the request's address is set around an effect and nowhere else", () =>
    Effect.gen(function*() {
      expect(yield* FiberRef.get(RequestAddress)).toBeUndefined()
      expect(yield* fromAddress("192.0.2.1")(FiberRef.get(RequestAddress))).toBe("192.0.2.1")
      expect(yield* FiberRef.get(RequestAddress)).toBeUndefined()
    }))
})
