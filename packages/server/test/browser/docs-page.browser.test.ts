import type { ServerResponse } from "node:http"
import { type Browser, chromium, type Locator, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, start, type TestServer } from "../api/helpers.js"
import { chromiumPath } from "./chromium.js"

/**
 * The docs page as a newcomer uses it, in Chromium (headless): Authorize with the operator's
 * access token, then "Try it out" and Execute, leaving the fields as the page fills them in from
 * the OpenAPI document's examples: a find of organizations (its `$sort` example sent as a deep
 * object), the create of an organization, the find again with its filter's other example (sent
 * as a field of the query), and the create of a key of the new organization, whose example's
 * made-up organization id is replaced. Each answer the page shows is a 2xx, and the server
 * answered what the page sent with that status.
 */

/** What the server saw of a request, once answered. */
interface Seen {
  readonly method: string
  readonly url: URL
  readonly status: number
}

let server: TestServer
let browser: Browser
let token: string
const seen: Array<Seen> = []

beforeAll(async () => {
  const executablePath = chromiumPath()
  server = await start()
  server.server.on("request", (req, res: ServerResponse) => {
    res.once("finish", () => seen.push({ method: req.method ?? "", url: new URL(req.url ?? "/", server.url), status: res.statusCode }))
  })
  const session = await fetch(`${server.url}/v1/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "api-key", ...ADMIN })
  })
  expect(session.status).toBe(201)
  token = ((await session.json()) as { access_token: string }).access_token
  browser = await chromium.launch({ executablePath, headless: true })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
}, 30_000)

/**
 * The operation's block on the page, by its operation id: Swagger UI's element id names its tag
 * and id, the id's dots escaped with a backslash (a backslash in the selector's string is `\\`).
 */
const operation = (page: Page, tag: string, operationId: string): Locator =>
  page.locator(`[id=${JSON.stringify(`operations-${tag}-${operationId.replaceAll(".", "\\.")}`)}]`)

/** Opens the operation and switches it to "Try it out": its fields are then filled in from the document. */
const tryItOut = async (block: Locator) => {
  await block.locator(".opblock-summary-control").click()
  await block.getByRole("button", { name: "Try it out" }).click()
}

/** Executes the operation; answers the status its response panel then shows (a previous answer cleared first). */
const execute = async (block: Locator): Promise<number> => {
  const clear = block.locator(".btn-clear")
  if (await clear.isVisible()) {
    await clear.click()
    await block.locator(".live-responses-table").waitFor({ state: "detached" })
  }
  await block.getByRole("button", { name: "Execute" }).click()
  const status = block.locator(".live-responses-table .response .response-col_status")
  await status.waitFor()
  return Number((await status.innerText()).trim())
}

/** The JSON body the operation's response panel shows (the body comes before the headers). */
const answerOf = async (block: Locator): Promise<any> =>
  JSON.parse(await block.locator(".live-responses-table .response .response-col_description pre.microlight").first().innerText())

/** The last request the server answered with this method and path. */
const lastSeen = (method: string, pathname: string) => [...seen].reverse().find((s) => s.method === method && s.url.pathname === pathname)

describe("the docs page", () => {
  it("authorizes with an access token, then executes a find and creates as the page fills them in", async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      const errors: Array<string> = []
      page.on("pageerror", (e) => errors.push(String(e)))
      await page.goto(`${server.url}/docs/`)
      await operation(page, "organizations", "organizations.find").waitFor()

      // Authorize: the access token in the bearer scheme's field.
      await page.locator(".auth-wrapper .btn.authorize").click()
      const bearer = page.locator(".modal-ux .auth-container").filter({ has: page.locator("h4 code", { hasText: /^bearer$/ }) })
      await bearer.locator("input").fill(token)
      await bearer.getByRole("button", { name: "Apply credentials" }).click()
      await bearer.locator("button", { hasText: "Logout" }).waitFor()
      await page.locator(".modal-ux .close-modal").click()
      await page.locator(".modal-ux").waitFor({ state: "detached" })

      // A find, with the page's own values: its $sort example, no filter.
      const find = operation(page, "organizations", "organizations.find")
      await tryItOut(find)
      expect(await execute(find)).toBe(200)
      const sent = lastSeen("GET", "/v1/organizations")
      expect(sent?.status).toBe(200)
      expect(sent?.url.searchParams.get("$sort[created_at]")).toBe("-1")
      // The operator's own organization at least.
      expect((await answerOf(find)).data.length).toBeGreaterThan(0)

      // A create, with the body example as it is.
      const create = operation(page, "organizations", "organizations.create")
      await tryItOut(create)
      expect(await execute(create)).toBe(201)
      expect(lastSeen("POST", "/v1/organizations")?.status).toBe(201)
      const organization = (await answerOf(create)) as { id: string; name: string }
      expect(organization.name).toBe("Acme Shop")

      // The find again, its filter's other example chosen: a field of the query itself, which finds what the create made.
      await find.locator("tr[data-param-name=filter] select.examples-select-element").selectOption("by_name")
      expect(await execute(find)).toBe(200)
      expect(lastSeen("GET", "/v1/organizations")?.url.searchParams.get("name")).toBe("Acme Shop")
      expect((await answerOf(find)).data.map((o: { id: string }) => o.id)).toEqual([organization.id])

      // A key of it: the example's made-up organization replaced by the new one, the rest as it is.
      const keys = operation(page, "keys", "keys.create")
      await tryItOut(keys)
      const body = keys.locator("textarea.body-param__text")
      const example = JSON.parse(await body.inputValue()) as { organization_id: string }
      await body.fill(JSON.stringify({ ...example, organization_id: organization.id }))
      expect(await execute(keys)).toBe(201)
      expect(lastSeen("POST", "/v1/keys")?.status).toBe(201)
      expect(await answerOf(keys)).toMatchObject({ organization_id: organization.id, name: "Order service" })
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  }, 120_000)
})
