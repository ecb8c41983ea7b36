import { describe, expect, it } from "vitest"
import { call } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The docs page serves only the files it loads, each under a policy that allows no inline
 * script, no other origin and no framing.
 */

const { server } = useServer({}, { operator: false })

const expectGuarded = (headers: Headers, what: string) => {
  const policy = headers.get("content-security-policy") ?? ""
  const directives = new Map(policy.split(";").map((d) => {
    const [name, ...values] = d.trim().split(/\s+/)
    return [name!, values] as const
  }))
  expect(directives.get("default-src"), what).toEqual(["'self'"])
  expect(directives.get("script-src"), what).toEqual(["'self'"])
  expect(directives.get("frame-ancestors"), what).toEqual(["'none'"])
  expect(policy, what).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/)
  expect(headers.get("x-frame-options"), what).toBe("DENY")
}

describe("the docs page", () => {
  it("has no inline script, and every file it references is served under the policy", async () => {
    const page = await call(server.url, "GET", "/docs/")
    expect(page.status).toBe(200)
    expectGuarded(page.headers, "page")
    const scripts = [...page.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBeGreaterThan(0)
    for (const [, attributes, content] of scripts) {
      expect(attributes).toMatch(/\bsrc=/)
      expect(content!.trim()).toBe("")
    }
    expect(page.text).not.toMatch(/\son\w+=/i)
    expect(page.text).not.toMatch(/<style/i)
    const referenced = [...page.text.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(referenced.length).toBeGreaterThanOrEqual(3)
    for (const ref of referenced) {
      expect(ref, "a file of the page itself").toMatch(/^\.\/[\w.-]+$/)
      const r = await call(server.url, "GET", `/docs/${ref.slice(2)}`)
      expect(r.status, ref).toBe(200)
      expectGuarded(r.headers, ref)
    }
    const init = await call(server.url, "GET", "/docs/init.js")
    // The validator badge would send the document to another origin.
    expect(init.text).toMatch(/validatorUrl:\s*null/)
    expect(init.text).not.toMatch(/https?:/)
  })

  it("the rest of Swagger UI's package is not served", async () => {
    for (const name of [
      "package.json",
      "oauth2-redirect.html",
      "oauth2-redirect.js",
      "index.html",
      "index.css",
      "swagger-initializer.js",
      "swagger-ui.js",
      "swagger-ui-bundle.js.map",
      "swagger-ui-standalone-preset.js",
      "favicon-32x32.png",
      "README.md",
      "LICENSE"
    ]) {
      const r = await call(server.url, "GET", `/docs/${name}`)
      expect(r.status, name).toBe(404)
      expect(r.body?.name, name).toBe("NotFound")
    }
  })
})
