import { actions, resources } from "@cmp/core"
import { openApiDocument } from "@cmp/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConsentPlatformApi } from "../src/index.js"
import { functions, hostPathOf, testPlatform } from "./hostFixture.js"

/**
 * The REST API and the host API follow from the same declarations: every operation of the
 * OpenAPI document (`<place>.<name>`) is a function of the host tree at that place, and every
 * function of the tree is an operation of the document.
 */

let cmp: ConsentPlatformApi

beforeAll(async () => {
  cmp = await testPlatform()
})
afterAll(() => cmp?.dispose())

/** The operation tree of the host API: what is not a resource's or an action's is left out. */
const operationTree = (api: ConsentPlatformApi): object => {
  const { effect: _e, runtime: _r, asOrganization: _a, asOperator: _o, forOrganization: _f, dispose: _d, ...tree } = api
  return Object.fromEntries(Object.entries(tree).filter(([, v]) => typeof v === "object"))
}

describe("the host API and the OpenAPI document", () => {
  const document = openApiDocument(resources, actions) as { paths: Record<string, Record<string, { operationId: string }>> }
  const operationIds = Object.values(document.paths).flatMap((operations) => Object.values(operations).map((o) => o.operationId))

  it("name the same operations: each of the document's is a host function, and the reverse", () => {
    expect(operationIds.length).toBeGreaterThan(100)
    const documented = operationIds.map(hostPathOf).sort()
    expect(new Set(documented).size).toBe(documented.length)
    expect(functions(operationTree(cmp)).sort()).toEqual(documented)
    expect(functions(cmp.effect).sort()).toEqual(documented)
    expect(functions(cmp.forOrganization("any")).filter((f) => !f.startsWith("effect/")).sort()).toEqual(documented)
  })

  it("documents every declared action under its place and name", () => {
    for (const a of actions) expect(operationIds).toContain(`${a.place}.${a.name}`)
  })
})
