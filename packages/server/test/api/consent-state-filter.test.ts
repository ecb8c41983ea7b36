import { describe, expect, it } from "vitest"
import { as, client } from "@cmp/test-support/http"
import { approvedContent, expect400, expect403 } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * `GET /v1/consents/users?consent_state=…`: the users whose `consent_state` is the one asked,
 * exactly as each user shows it, under the policy as it is when the request is answered.
 */

const { server, op, tenant } = useServer()

const FULL = { consents_api: true }
const DAY = 86_400_000
const STATES = ["none", "given", "refused", "expired", "recollect"] as const
const ago = (ms: number) => new Date(server.clock.millis - ms).toISOString()

interface Choice {
  readonly purposes?: ReadonlyArray<readonly [string, boolean]>
  readonly vendors?: ReadonlyArray<string>
  readonly content?: string
  readonly regulation?: string
}

const event = async (t: TestTenant, user: string, created_at: string, choice: Choice) => {
  const r = await t.call("POST", "/v1/consents/events", {
    body: {
      organization_id: t.org.id,
      created_at,
      regulation: choice.regulation ?? "gdpr",
      user: { organization_user_id: user },
      consents: {
        purposes: (choice.purposes ?? []).map(([id, enabled]) => ({ id, enabled })),
        ...(choice.vendors !== undefined ? { vendors: { enabled: choice.vendors } } : {})
      },
      ...(choice.content !== undefined ? { notice_text_content_id: choice.content } : {})
    }
  })
  expect(r.status, r.text).toBe(201)
}

type User = { organization_user_id: string; consent_state: string; id: string }

/** Every user of the tenant as the unfiltered find shows it, by organization user id. */
const shown = async (t: TestTenant, query = "") => {
  const r = await t.call("GET", `/v1/consents/users?$limit=1000${query}`)
  expect(r.status, r.text).toBe(200)
  return new Map((r.body.data as Array<User>).map((u) => [u.organization_user_id, u.consent_state]))
}

const names = (data: ReadonlyArray<User>) => data.map((u) => u.organization_user_id).sort()

/** The tenant once the clock moved on by `ms`, signed in again (its session lapses meanwhile). */
const later = async (t: TestTenant, ms: number): Promise<TestTenant> => {
  server.clock.advance(ms)
  return { ...t, call: as(server.url, await client(server.url).login(t.key.id, t.secret)) }
}

/** Walks a filtered find by cursor, two users a page. */
const walk = async (t: TestTenant, filter: string) => {
  const out: Array<User> = []
  let cursor = ""
  for (let i = 0; i < 100; i++) {
    const r = await t.call("GET", `/v1/consents/users?${filter}&$limit=2&$cursor=${encodeURIComponent(cursor)}`)
    expect(r.status, r.text).toBe(200)
    out.push(...r.body.data)
    if (r.body.cursor === null) return out
    cursor = r.body.cursor
  }
  throw new Error("the walk did not end")
}

/**
 * The filtered finds (each state, a `$in` of two, by offset with their totals and by cursor)
 * answer exactly the users the unfiltered find shows in those states.
 */
const agrees = async (t: TestTenant, regulation = "gdpr") => {
  const view = `&regulation=${regulation}`
  const all = await shown(t, view)
  const expected = (states: ReadonlyArray<string>) => [...all].filter(([, s]) => states.includes(s)).map(([u]) => u).sort()
  for (const state of STATES) {
    const r = await t.call("GET", `/v1/consents/users?consent_state=${state}&$limit=1000${view}`)
    expect(r.status, r.text).toBe(200)
    expect(names(r.body.data), state).toStrictEqual(expected([state]))
    expect(r.body.total, state).toBe(expected([state]).length)
    for (const u of r.body.data as Array<User>) expect(u.consent_state).toBe(state)
  }
  const pair = ["expired", "recollect"]
  const both = await t.call("GET", `/v1/consents/users?consent_state[$in]=expired&consent_state[$in]=recollect&$limit=1000${view}`)
  expect(both.status, both.text).toBe(200)
  expect(names(both.body.data)).toStrictEqual(expected(pair))
  expect(both.body.total).toBe(expected(pair).length)
  const listed = await t.call("GET", `/v1/consents/users?consent_state=given&consent_state=none&$limit=1000${view}`)
  expect(names(listed.body.data)).toStrictEqual(expected(["given", "none"]))
  // A page by offset counts every match, and a walk by cursor meets each once.
  const page = await t.call("GET", `/v1/consents/users?consent_state[$in]=given&consent_state[$in]=refused&$limit=1${view}`)
  expect(page.body.data.length).toBeLessThanOrEqual(1)
  expect(page.body.total).toBe(expected(["given", "refused"]).length)
  expect(names(await walk(t, `consent_state[$in]=given&consent_state[$in]=refused${view}`))).toStrictEqual(expected(["given", "refused"]))
  expect(names(await walk(t, `consent_state=none${view}`))).toStrictEqual(expected(["none"]))
  return all
}

describe("the consent_state filter of consent users", () => {
  it("refuses an unknown state, other operators, and the filter inside $or, naming consent_state", async () => {
    const t = await tenant(FULL)
    for (const query of ["consent_state=lapsed", "consent_state[$in]=given&consent_state[$in]=soon", "consent_state[$ne]=given", "consent_state[$nin]=given"]) {
      const r = await t.call("GET", `/v1/consents/users?${query}`)
      expect400(r)
      expect(Object.keys(r.body.errors), query).toStrictEqual(["consent_state"])
    }
    const inOr = await t.call("GET", "/v1/consents/users?$or[0][consent_state]=given")
    expect400(inOr)
    expect(Object.keys(inOr.body.errors)[0]).toContain("consent_state")
    expect400(await t.call("GET", "/v1/consents/users?$sort[consent_state]=1"))
  })

  it("never shows another organization's users; the operator names the organization", async () => {
    const a = await tenant(FULL)
    const b = await tenant(FULL)
    for (const t of [a, b]) {
      const p = await t.call("POST", "/v1/consents/policies", { body: { organization_id: t.org.id, consent_duration: 1, consent_duration_unit: "days" } })
      expect(p.status, p.text).toBe(201)
      await event(t, "old", ago(2 * DAY), { purposes: [["analytics", true]] })
      await event(t, "new", ago(1000), { purposes: [["analytics", true]] })
    }
    const mine = await a.call("GET", "/v1/consents/users?consent_state=expired")
    expect(mine.status, mine.text).toBe(200)
    expect(mine.body.data.map((u: { organization_id: string }) => u.organization_id)).toStrictEqual([a.org.id])
    expect(mine.body.total).toBe(1)
    const walked = await walk(a, "consent_state[$in]=expired&consent_state[$in]=given")
    expect(new Set(walked.map((u) => u.id)).size).toBe(2)
    expect(walked.every((u) => (u as unknown as { organization_id: string }).organization_id === a.org.id)).toBe(true)
    expect403(await a.call("GET", `/v1/consents/users?consent_state=expired&organization_id=${b.org.id}`))
    const theirs = await op.call("GET", `/v1/consents/users?consent_state=expired&organization_id=${b.org.id}`)
    expect(theirs.status, theirs.text).toBe(200)
    expect(theirs.body.data.map((u: { organization_id: string }) => u.organization_id)).toStrictEqual([b.org.id])
    const both = await op.call("GET", `/v1/consents/users?consent_state=expired&organization_id[$in]=${a.org.id}&organization_id[$in]=${b.org.id}`)
    expect(both.body.total).toBe(2)
    const unbounded = await op.call("GET", "/v1/consents/users?consent_state=expired")
    expect400(unbounded)
    expect(unbounded.body.errors).toHaveProperty("organization_id")
  })
  it("answers what each user shows, in every state, under every form of the policy and as time passes", async () => {
    const t = await tenant(FULL)
    const text = await t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name: "Banner" } })
    const content = async (words: string) => (await approvedContent(op, t, words, text.body.id)).id as string
    const v1 = await content("We use cookies.")
    const v2 = await content("We use cookies, and more of them.")
    const policy = await t.call("POST", "/v1/consents/policies", {
      body: {
        organization_id: t.org.id,
        consent_duration: 3,
        consent_duration_unit: "months",
        denied_consent_duration: 10,
        denied_consent_duration_unit: "days",
        essential_purpose_ids: ["essential"],
        recollect_before: ago(40 * DAY),
        notice_text_id: text.body.id,
        recollect_on_new_content: true
      }
    })
    expect(policy.status, policy.text).toBe(201)
    const yes: Choice = { purposes: [["analytics", true], ["essential", true]], content: v2 }
    const essentialOnly: Choice = { purposes: [["analytics", false], ["essential", true]], content: v2 }
    await event(t, "given", ago(DAY), yes)
    await event(t, "given-by-vendor", ago(DAY), { purposes: [["analytics", false]], vendors: ["vendor-1"], content: v2 })
    await event(t, "refused", ago(DAY), essentialOnly)
    await event(t, "refused-at-the-end", ago(10 * DAY - 1), essentialOnly)
    await event(t, "refused-expired", ago(10 * DAY), essentialOnly)
    await event(t, "given-expired", ago(100 * DAY), yes)
    await event(t, "given-before-cutoff", ago(50 * DAY), yes)
    await event(t, "refused-before-cutoff", ago(45 * DAY), { ...essentialOnly, purposes: [] })
    await event(t, "older-wording", ago(DAY), { ...yes, content: v1 })
    await event(t, "no-wording", ago(DAY), { purposes: yes.purposes })
    await event(t, "ccpa-only", ago(DAY), { ...yes, regulation: "ccpa" })
    // A newer event starts a new period; an older one merged later does not.
    await event(t, "renewed", ago(200 * DAY), yes)
    await event(t, "renewed", ago(2 * DAY), yes)
    await event(t, "renewed", ago(300 * DAY), { purposes: [["analytics", false]] })
    const bare = await t.call("POST", "/v1/consents/users", { body: { organization_id: t.org.id, organization_user_id: "no-event" } })
    expect(bare.status, bare.text).toBe(201)

    const first = await agrees(t)
    expect(Object.fromEntries(first)).toStrictEqual({
      "given": "given",
      "given-by-vendor": "given",
      "refused": "refused",
      "refused-at-the-end": "refused",
      "refused-expired": "expired",
      "given-expired": "expired",
      "given-before-cutoff": "recollect",
      "refused-before-cutoff": "expired",
      "older-wording": "recollect",
      "no-wording": "recollect",
      "ccpa-only": "none",
      "renewed": "given",
      "no-event": "none"
    })
    await agrees(t, "ccpa")
    // Every form of the policy, each applying at once: days, seconds, no denied duration, no
    // re-collection, essential purposes changed; then time passing; then no policy at all.
    const id = policy.body.id as string
    for (const patch of [
      { consent_duration: 30, consent_duration_unit: "days" },
      { denied_consent_duration: 864_000, denied_consent_duration_unit: "seconds", consent_duration: 4_000_000, consent_duration_unit: "seconds" },
      { denied_consent_duration: null, denied_consent_duration_unit: null, consent_duration: 1, consent_duration_unit: "months" },
      { recollect_before: null },
      { recollect_on_new_content: false, essential_purpose_ids: [] },
      { essential_purpose_ids: ["analytics", "essential"], consent_duration: 13, consent_duration_unit: "months", recollect_on_new_content: true }
    ]) {
      const r = await t.call("PATCH", `/v1/consents/policies/${id}`, { body: patch })
      expect(r.status, r.text).toBe(200)
      const states = await agrees(t)
      expect(new Set(states.values()).size, JSON.stringify(patch)).toBeGreaterThan(1)
    }
    // Time passes (the last test of the file: the operator's session lapses with it).
    await agrees(await later(t, 9 * DAY))
    const t2 = await later(t, 400 * DAY)
    const late = await agrees(t2)
    expect(late.get("given")).toBe("expired")
    expect((await t2.call("DELETE", `/v1/consents/policies/${id}`)).status).toBe(200)
    const without = await agrees(t2)
    expect(new Set(without.values())).toStrictEqual(new Set(["none", "given", "refused"]))
  })
})
