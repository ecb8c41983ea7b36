import { deleteSubscriber, saveSubscriber } from "@cmp/core"
import { dataUri, samplePdf } from "@cmp/test-support/proof-samples"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { as, call, getPage, type Reply, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Tenant isolation, generated from the OpenAPI document: organization B gets one object of
 * every organization-scoped collection, then principals of organization A (its API key, a
 * member of A only, and a platform integration of A) walk every path and method of the
 * document with B's ids in the path, B's organization in filters and bodies, and B's objects
 * referred to from A's own bodies. Every answer must be a refusal in the contract's error
 * body (or, for a find, a page of A's rows only), must look exactly like the answer for an id
 * that does not exist, and must not contain any id, secret or text of B. Afterwards every
 * object of B reads back unchanged and B's collections hold as many rows as before.
 *
 * A newly documented path fails the coverage test until it gets a fixture below (or an entry,
 * with its reason, in the allow-list of actions).
 *
 * A's end-user credentials walk the same operations: its public key (header, and query) is a 401
 * everywhere but the consent write, and a consent token of one of A's users is a 403 or 404
 * everywhere but its own user, its user's events and its user's writes; where they are served,
 * they reach A and that one user only.
 */

type Method = "get" | "post" | "put" | "patch" | "delete"
/** The Feathers method an HTTP operation maps to (what `operatorOnly` names). */
type Service = "find" | "get" | "create" | "update" | "patch" | "remove"
type Caller = ReturnType<typeof as>
type Who = "api key" | "member" | "platform integration"
/** A's credentials for browsers and apps: its public key (header or query), a consent token of A's seeded user. */
type EndUser = "public key (header)" | "public key (query)" | "consent token"
type Walker = Who | EndUser
const END_USERS: ReadonlyArray<EndUser> = ["public key (header)", "public key (query)", "consent token"]
const isEndUser = (who: Walker): who is EndUser => (END_USERS as ReadonlyArray<string>).includes(who)

/** An organization of the test and the objects seeded in it, by collection path. */
interface Org {
  readonly label: string
  readonly org: any
  readonly key: any
  readonly secret: string
  readonly token: string
  readonly call: Caller
  /** Embedded in every free text seeded in this organization, so a leak of any of it is visible. */
  readonly mark: string
  readonly objs: Record<string, any>
}

/** What a body is built from: the organization it names, the objects it refers to, its text. */
interface Ctx {
  readonly org: string
  readonly objs: Record<string, any>
  readonly mark: string
}

interface Fixture {
  /** Creates (or looks up) this collection's object in `o`; default: POST `create(o)` as `o` (as the operator when create is operator-only). */
  readonly seed?: (o: Org) => Promise<any>
  /** A valid create body for the organization `c.org` referring to the objects `c.objs`. */
  readonly create?: (c: Ctx) => Record<string, unknown>
  /**
   * The answer to a create naming B: 403, or 400 when the owner comes from a referenced object
   * (cookies and vendors name a property; another organization's property reads as absent).
   */
  readonly intoB?: 400 | 403
  /**
   * Why a create in A that refers to B's objects answers differently from one referring to
   * unknown ids (an existence oracle the decisions accept); without it the answers must match.
   */
  readonly refsOracle?: string
  /**
   * Why a create in A naming B's ids is no attack: the ids are unique per organization, so it
   * makes A's own object under that id (walked by the same-id test below, after the walks, so
   * the "B's id" attacks still meet ids A does not hold).
   */
  readonly refsAreOwn?: string
  /** Principals for which a create is not an attack on B (a member may self-register an organization). */
  readonly createNotAnAttackFor?: ReadonlyArray<Who>
  readonly put?: (c: Ctx) => Record<string, unknown>
  readonly patch?: (c: Ctx) => Record<string, unknown>
  /** Methods only the operator may call: 403 to anyone else, whatever the id. */
  readonly operatorOnly?: ReadonlyArray<Service>
  /** The field naming the owning organization in find filters (default `organization_id`). */
  readonly ownerField?: string
  /** Other item paths naming the same object (consent users by the organization's own id). */
  readonly alsoNamedBy?: (obj: any) => ReadonlyArray<string>
  /**
   * Requests on A's own objects that name B's objects where the generic "referring to B" create
   * cannot (it is skipped when `refsAreOwn`): each must answer like the same request naming ids
   * that do not exist.
   */
  readonly refAttacks?: Partial<Record<Method, (who: Walker) => ReadonlyArray<Omit<Attack, "op">>>>
}

const cert = fs.readFileSync(path.join(import.meta.dirname, "fixtures", "localhost-cert.pem"), "utf8")
const vendorList = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "fixtures", "vendor-list.json"), "utf8"))
const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

let exportsRoot: string
let doc: { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } }
let A: Org
let B: Org
/** Tokens of A's principals. */
const principals = {} as Record<Walker, string>
/** Why the consent token of A could not be made (the walk of that principal then fails). */
let consentTokenProblem: string | undefined
/** A user of A that is not the consent token's. */
let secondUserOfA: any
/** Strings of B (ids, secrets shown once, seeded text) that no answer to A may contain. */
let forbidden: Array<string> = []
/** B's objects as B (or the operator) read them after seeding, and B's collection sizes. */
const snapshot: Record<string, unknown> = {}
const totals: Record<string, number> = {}

const created = async (by: Caller, url: string, body: unknown) => {
  const r = await by("POST", url, { body })
  expect(r.status, `seeding POST ${url}: ${r.text}`).toBe(201)
  return r.body
}
const ctxOf = (o: Org): Ctx => ({ org: o.org.id, objs: o.objs, mark: o.mark })
/** The id part of the invitation token (`inv_<id>.<secret>`) of the organization's seeded member. */
const invitationIdOf = (o: Org) => /^inv_([^.]+)\./.exec(o.objs["/v1/members"].invitation.token)![1]!
/** Whether a body names any of B's objects (or B itself). */
const refersToB = (body: unknown) => {
  const text = JSON.stringify(body)
  return Object.values(B.objs).some((o) => text.includes(o.id))
}
const hostOf = (website: string) => new URL(website).hostname
const app = { app: { essentialPurposes: ["c1"], vendors: { include: ["v1"], iab: {} } } }
const dashboard = (c: Ctx) => ({
  organization_id: c.org,
  name: `${c.mark} dashboard`,
  description: `${c.mark} dashboard description`,
  type: "tool-a",
  product: "cmp",
  aggregation_period: "daily",
  category: "analytics",
  target_url: `https://dash.example.com/${c.mark}`
})
const exportRange = { from: "2026-01-01T00:00:00.000Z", to: "2027-01-01T00:00:00.000Z" }
/** A valid event of A (read when a request is built, after seeding). */
const eventOfA = () => FIXTURES["/v1/consents/events"]!.create!(ctxOf(A))
/** B's consent log as B reads it right after seeding. */
let logOfB: any

/**
 * One fixture per organization-scoped collection of the OpenAPI document, seeded in this order
 * (later ones refer to earlier ones).
 */
const FIXTURES: Record<string, Fixture> = {
  "/v1/organizations": {
    seed: async (o) => (await o.call("GET", `/v1/organizations/${o.org.id}`)).body,
    create: (c) => ({ name: `${c.mark}-org-${unique("o")}` }),
    // Organizations are created by the operator; a member may self-register a new one, which
    // names no other organization: not an attack on B.
    createNotAnAttackFor: ["member"],
    put: (c) => ({ name: `${c.mark}-renamed-${unique("o")}` }),
    patch: (c) => ({ website: `https://${c.mark}.example` }),
    operatorOnly: ["remove"],
    ownerField: "id"
  },
  "/v1/quotas": {
    // Generous quotas, so no request of the walk is refused for a count.
    seed: async (o) => {
      const q = await op.quotaOf(o.org.id)
      const limits = Object.fromEntries(Object.keys(q).filter((k) => typeof q[k] === "number" && k !== "version").map((k) => [k, 1_000_000]))
      const r = await op.call("PATCH", `/v1/quotas/${q.id}`, { body: limits })
      expect(r.status, r.text).toBe(200)
      return r.body
    },
    create: (c) => ({ organization_id: c.org }),
    patch: () => ({ secrets: 5 }),
    operatorOnly: ["create", "patch"]
  },
  "/v1/premium-features": {
    // Every premium feature on, so requests reach the scope check rather than a feature gate.
    seed: async (o) => {
      const f = await op.featuresOf(o.org.id)
      const flags = Object.fromEntries(Object.keys(f).filter((k) => typeof f[k] === "boolean").map((k) => [k, true]))
      const r = await op.call("PATCH", `/v1/premium-features/${f.id}`, { body: flags })
      expect(r.status, r.text).toBe(200)
      return r.body
    },
    create: (c) => ({ organization_id: c.org }),
    put: (c) => {
      const f = c.objs["/v1/premium-features"]
      return Object.fromEntries(Object.keys(f).filter((k) => typeof f[k] === "boolean").map((k) => [k, false]))
    },
    patch: () => ({ webhooks: false }),
    operatorOnly: ["create", "update", "patch"]
  },
  "/v1/keys": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark}-key-${unique("k")}`, description: `${c.mark} key` }),
    put: (c) => ({ name: `${c.mark}-key-${unique("k")}`, enabled: true }),
    patch: (c) => ({ description: `${c.mark} changed` })
  },
  "/v1/secrets": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark}-secret-${unique("s")}`, description: `${c.mark} secret` }),
    put: (c) => ({ name: `${c.mark}-secret-${unique("s")}` }),
    patch: (c) => ({ description: `${c.mark} changed` })
  },
  "/v1/members": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark} member`, email: `${c.mark}-${unique("m")}@example.com` }),
    patch: () => ({ saml_active: true })
  },
  "/v1/webhooks": {
    create: (c) => ({
      organization_id: c.org,
      url: `http://127.0.0.1:9/${c.mark}`,
      auth: { token_url: "http://127.0.0.1:9/token", client_id: `${c.mark}-client`, client_secret: `${c.mark}-client-secret` }
    }),
    put: (c) => ({ url: `http://127.0.0.1:9/${c.mark}-put`, enabled: true, event_types: [], flatten: false, regulations: ["gdpr"] }),
    patch: (c) => ({ url: `http://127.0.0.1:9/${c.mark}-patch` })
  },
  "/v1/consents/users": {
    create: (c) => ({
      organization_id: c.org,
      organization_user_id: `${c.mark}-user-${unique("u")}`,
      metadata: { note: `${c.mark} user` },
      country: "FR"
    }),
    patch: () => ({ country: "DE" }),
    alsoNamedBy: (u) => [`${encodeURIComponent(u.organization_user_id)}?$by_organization_user_id=true`]
  },
  "/v1/consents/proofs": {
    // The organization's mark in the PDF: its bytes, and so its sha256, are its own.
    create: (c) => ({ organization_id: c.org, file: dataUri("application/pdf", samplePdf(`${c.mark} agreed`)) })
  },
  "/v1/consents/events": {
    // Names the user by our id.
    refsAreOwn: "a consent user's id is its organization's own: the same id in A is A's user",
    create: (c) => ({
      organization_id: c.org,
      user: { id: c.objs["/v1/consents/users"].id },
      metadata: { note: `${c.mark} event` },
      consents: { purposes: [{ id: "1", enabled: true }, { id: `${c.mark}-purpose`, enabled: false }] },
      proofs_id: [c.objs["/v1/consents/proofs"].id]
    }),
    patch: (c) => ({ metadata: { note: `${c.mark} changed` } }),
    // A proof is named by an id the server chose: B's proof named by A's event reads as unknown.
    refAttacks: {
      post: (who) => [{
        what: "in A, B's proof in proofs_id",
        method: "POST",
        url: "/v1/consents/events",
        body: { ...eventOfA(), proofs_id: [B.objs["/v1/consents/proofs"].id] },
        // End-user credentials may never name proofs by id.
        expect: isEndUser(who) ? [403] : [400]
      }, {
        what: "in A, B's notice text content",
        method: "POST",
        url: "/v1/consents/events",
        body: { ...eventOfA(), proofs_id: [], notice_text_content_id: B.objs["/v1/widgets/notices/texts-contents"].id },
        expect: isEndUser(who) ? [400, 403] : [400]
      }],
      patch: () => [{
        what: "A's event, B's proof in proofs_id",
        method: "PATCH",
        url: `/v1/consents/events/${encodeURIComponent(A.objs["/v1/consents/events"].id)}`,
        body: { proofs_id: [A.objs["/v1/consents/proofs"].id, B.objs["/v1/consents/proofs"].id] },
        expect: [400]
      }]
    }
  },
  "/v1/consents/proof-reports": {
    // A report on the user above, taken after its event: it holds the event, the proof and their log entries.
    create: (c) => ({ organization_id: c.org, user_id: c.objs["/v1/consents/users"].id, regulation: "gdpr" }),
    refAttacks: {
      post: () => [{
        what: "in A, B's user by the organization's id",
        method: "POST",
        url: "/v1/consents/proof-reports",
        body: { organization_id: A.org.id, organization_user_id: B.objs["/v1/consents/users"].organization_user_id },
        expect: [400]
      }]
    }
  },
  "/v1/webhooks/deliveries": {
    // The messages queued by the user and the event above.
    seed: async (o) => {
      const r = await o.call("GET", `/v1/webhooks/deliveries?webhook_id=${o.objs["/v1/webhooks"].id}&$sort[created_at]=1`)
      expect(r.status, r.text).toBe(200)
      expect(r.body.total).toBeGreaterThan(0)
      return r.body.data[0]
    }
  },
  "/v1/widgets/notices/texts": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark} text`, platforms: ["web"] }),
    put: (c) => ({ name: `${c.mark} put`, platforms: ["web"], default: false }),
    patch: (c) => ({ name: `${c.mark} patch` })
  },
  "/v1/widgets/notices/texts-contents": {
    create: (c) => ({ organization_id: c.org, text_id: c.objs["/v1/widgets/notices/texts"].id, content: `${c.mark} content` }),
    put: (c) => ({ content: `${c.mark} put`, includes_purposes: false }),
    patch: (c) => ({ content: `${c.mark} patch` })
  },
  "/v1/consents/policies": {
    // Names the organization's notice text: B's reads as unknown (400 either way). One per
    // organization and regulation: each body its own regulation, so the walk's creates in A succeed.
    create: (c) => ({
      organization_id: c.org,
      regulation: unique("r"),
      consent_duration: 13,
      consent_duration_unit: "months",
      notice_text_id: c.objs["/v1/widgets/notices/texts"].id,
      essential_purpose_ids: [`${c.mark}-essential`]
    }),
    patch: () => ({ consent_duration: 6 })
  },
  "/v1/widgets/notices/configs": {
    create: (c) => ({ organization_id: c.org, config: { platform: "web", text_mode: "custom", notice_deployment_id: `${c.mark}-deployment` } }),
    put: () => ({ config: { platform: "amp" } }),
    patch: () => ({ config: { platform: "web" } })
  },
  "/v1/widgets/notices/templates/configs": {
    create: (c) => ({ organization_id: c.org, template_id: `${c.mark}-template`, config: app }),
    put: () => ({ config: app }),
    patch: (c) => ({ template_id: `${c.mark}-changed` })
  },
  "/v1/exports/configs": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark} export`, destinations: [{ type: "directory", path: c.mark }] }),
    put: (c) => ({ name: `${c.mark} put`, enabled: true, destinations: [{ type: "directory", path: c.mark }] }),
    patch: (c) => ({ name: `${c.mark} patch` })
  },
  "/v1/exports/runs": {
    // A run of the configuration above over the events and users seeded so far.
    seed: (o) =>
      created(o.call, "/v1/exports/execute", { organization_id: o.org.id, export_config_id: o.objs["/v1/exports/configs"].id, ...exportRange })
  },
  "/v1/properties": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark} property`, website: `https://www.${c.mark}.example` }),
    // The same website: without one the property's cookies could no longer be changed.
    put: (c) => ({ name: `${c.mark} put`, website: `https://www.${c.mark}.example` }),
    patch: (c) => ({ name: `${c.mark} patch` })
  },
  "/v1/domains": {
    create: (c) => ({ id: `${c.mark}-${unique("d")}.example.com`, organization_id: c.org, usage: "cmp", description: `${c.mark} domain` }),
    put: (c) => ({ enabled: true, description: `${c.mark} put` }),
    patch: (c) => ({ description: `${c.mark} patch` }),
    // A name reads the same by any spelling it could be created with.
    alsoNamedBy: (d) => [`${d.id.toUpperCase()}.`]
  },
  "/v1/cookies": {
    create: (c) => ({
      name: `${c.mark}-cookie`,
      domain: hostOf(c.objs["/v1/properties"].website).replace(/^www\./, ""),
      taxonomy_id: "t",
      property_id: c.objs["/v1/properties"].id
    }),
    intoB: 400,
    put: (c) => ({
      name: `${c.mark}-put`,
      domain: hostOf(c.objs["/v1/properties"].website).replace(/^www\./, ""),
      status: "draft",
      taxonomy_id: "t"
    }),
    patch: (c) => ({ name: `${c.mark}-patch` })
  },
  "/v1/vendors": {
    create: (c) => ({ property_id: c.objs["/v1/properties"].id, metadata_id: `${c.mark}-${unique("v")}` }),
    intoB: 400,
    put: (c) => ({ status: "published", metadata_id: `${c.mark}-${unique("v")}` }),
    patch: () => ({ status: "published" })
  },
  "/v1/privacy-centers": {
    create: (c) => ({ organization_id: c.org, name: `${c.mark} privacy center`, legal_name: `${c.mark} legal` }),
    put: (c) => ({ name: `${c.mark} put`, auth_required: false }),
    patch: (c) => ({ name: `${c.mark} patch` })
  },
  "/v1/sso-connections": {
    create: (c) => ({ organization_id: c.org, idp_certificate: cert, idp_sign_in_endpoint: `https://${c.mark}.idp.example/sso` }),
    // organization_id is required on patch and must be the connection's own.
    patch: (c) => ({ organization_id: c.org, idp_sign_saml_request: true })
  },
  "/v1/organizations-source-systems": {
    create: (c) => ({ organization_id: c.org, source_system: "sp", source_system_id: `${c.mark}-${unique("ss")}` })
  },
  "/v1/platform-integrations": {
    // An operator registry, but each integration belongs to an organization.
    create: (c) => ({ organization_id: c.org, name: `${c.mark} integration`, description: `${c.mark} integration` }),
    patch: (c) => ({ name: `${c.mark} patch` }),
    operatorOnly: ["find", "get", "create", "update", "patch", "remove"]
  },
  "/v1/analytics/dashboards": {
    // The operator's catalogue; an entry with organization_id is offered to that organization only.
    create: dashboard,
    put: (c) => {
      const { organization_id: _, ...rest } = dashboard(c)
      return rest
    },
    patch: (c) => ({ name: `${c.mark} patch` }),
    operatorOnly: ["find", "get", "create", "update", "patch", "remove"]
  },
  "/v1/analytics/dashboards-urls": {
    // The organization's view of the catalogue: B's entry, with its signed URL.
    seed: async (o) => {
      const r = await o.call("GET", `/v1/analytics/dashboards-urls?id=${o.objs["/v1/analytics/dashboards"].id}`)
      expect(r.status, r.text).toBe(200)
      expect(r.body.total).toBe(1)
      return r.body.data[0]
    }
  },
  "/v1/audit-logs": {
    // The trail of the organization's own changes: the entry of its property's creation.
    seed: async (o) => {
      const property = encodeURIComponent(o.objs["/v1/properties"].id)
      const r = await o.call("GET", `/v1/audit-logs?resource=properties&resource_id=${property}&action=create`)
      expect(r.status, r.text).toBe(200)
      expect(r.body.total).toBe(1)
      return r.body.data[0]
    }
  }
}

interface Action {
  /** Why this path has no organization-scoped collection of its own. */
  readonly why: string
  /** Credential exchanges ignore the bearer token: walked once (for the API key), which also keeps the login throttle out of the way. */
  readonly once?: boolean
  readonly attacks: Partial<Record<Method, () => ReadonlyArray<Omit<Attack, "op">>>>
}

/**
 * The allow-list: documented paths that are not an organization-scoped collection, each with
 * the reason and what is tried there instead.
 */
const ACTIONS: Record<string, Action> = {
  "/v1/sessions": {
    why: "credential exchange without a bearer token; B's key id with another secret is the failed-session 400",
    once: true,
    attacks: {
      post: () => [{ what: "B's key with A's secret", method: "POST", url: "/v1/sessions", body: { type: "api-key", key: B.key.id, secret: A.secret }, expect: [400] }]
    }
  },
  "/v1/invitations/accept": {
    why: "credential exchange: the invitation token is the credential, and only B's invitee has it",
    once: true,
    attacks: {
      post: () => [{
        what: "B's invitation with a guessed secret",
        method: "POST",
        url: "/v1/invitations/accept",
        body: { token: `inv_${invitationIdOf(B)}.guessed-secret`, password: "long enough password" },
        expect: [400]
      }]
    }
  },
  "/v1/platform-integrations/sessions": {
    why: "credential exchange: the integration's own token (x-platform-authorization) is the credential",
    once: true,
    attacks: {
      post: () => [{
        what: "B's integration id with a guessed secret",
        method: "POST",
        url: "/v1/platform-integrations/sessions",
        headers: { "x-platform-authorization": `pit_${B.objs["/v1/platform-integrations"].id}.guessed-secret` },
        expect: [400]
      }]
    }
  },
  "/v1/languages": {
    why: "global configuration, the same object for every caller: no organization scope",
    attacks: { get: () => [{ what: "read", method: "GET", url: "/v1/languages", expect: [200] }] }
  },
  "/v1/widgets/notices/generators/sdk": {
    why: "an action, nothing stored: tried with B's organization and with B's text",
    attacks: {
      post: () => [
        {
          what: "for B",
          method: "POST",
          url: "/v1/widgets/notices/generators/sdk",
          body: { organization_id: B.org.id, platform: "web", config: {} },
          expect: [403],
          control: { url: "/v1/widgets/notices/generators/sdk", body: { organization_id: A.org.id, platform: "web", config: {} }, expect: 201 }
        },
        {
          what: "for A with B's text",
          method: "POST",
          url: "/v1/widgets/notices/generators/sdk",
          body: { organization_id: A.org.id, platform: "web", config: {}, text_mode: "approved", text_id: B.objs["/v1/widgets/notices/texts"].id },
          // A text of another organization reads as absent (decisions: 400, never revealing it).
          expect: [400, 404]
        }
      ]
    }
  },
  "/v1/exports/execute": {
    why: "an action whose record is exports/runs: tried with B's organization and with B's configuration",
    attacks: {
      post: () => [
        {
          what: "for B with B's configuration",
          method: "POST",
          url: "/v1/exports/execute",
          body: { organization_id: B.org.id, export_config_id: B.objs["/v1/exports/configs"].id, ...exportRange },
          expect: [403]
        },
        {
          what: "for A with B's configuration",
          method: "POST",
          url: "/v1/exports/execute",
          body: { organization_id: A.org.id, export_config_id: B.objs["/v1/exports/configs"].id, ...exportRange },
          expect: [404],
          control: {
            url: "/v1/exports/execute",
            body: { organization_id: A.org.id, export_config_id: A.objs["/v1/exports/configs"].id, ...exportRange },
            expect: 201
          }
        }
      ]
    }
  },
  "/v1/consents/tokens": {
    why: "an action issuing a credential for one user of one organization, nothing stored: tried for B's user in B",
    attacks: {
      post: () => [{
        what: "for B's user",
        method: "POST",
        url: "/v1/consents/tokens",
        body: { organization_id: B.org.id, organization_user_id: B.objs["/v1/consents/users"].organization_user_id },
        expect: [403],
        control: {
          url: "/v1/consents/tokens",
          body: { organization_id: A.org.id, organization_user_id: A.objs["/v1/consents/users"].organization_user_id },
          expect: 201
        }
      }]
    }
  },
  "/v1/consents/log/verify": {
    why: "an action reading one organization's consent log, nothing stored: tried for B, alone and beside A",
    attacks: {
      get: () => {
        const a = encodeURIComponent(A.org.id)
        const b = encodeURIComponent(B.org.id)
        const url = "/v1/consents/log/verify"
        return [
          { what: "for B", method: "GET", url: `${url}?organization_id=${b}`, expect: [403], control: { url: `${url}?organization_id=${a}`, expect: 200 } },
          { what: "for A and B", method: "GET", url: `${url}?organization_id=${a}&organization_id=${b}`, expect: [400, 403] },
          { what: "B by $in", method: "GET", url: `${url}?organization_id[$in][]=${b}`, expect: [400, 403] },
          // Not a filter this action reads: ignored, so the answer is A's log (checked by B's head never showing).
          { what: "B by $or", method: "GET", url: `${url}?$or[0][organization_id]=${b}`, expect: [200, 400, 403] },
          // The caller's only organization: A's log (B's head is among the strings no answer may hold).
          { what: "implied organization", method: "GET", url, expect: [200] }
        ]
      }
    }
  },
  "/v1/webhooks/deliveries/stats": {
    why: "an action reading the delivery figures of one organization's webhooks, nothing stored: tried for B, alone and beside A",
    attacks: {
      get: () => {
        const a = encodeURIComponent(A.org.id)
        const b = encodeURIComponent(B.org.id)
        const url = "/v1/webhooks/deliveries/stats"
        return [
          { what: "for B", method: "GET", url: `${url}?organization_id=${b}`, expect: [403], control: { url: `${url}?organization_id=${a}`, expect: 200 } },
          { what: "for A and B", method: "GET", url: `${url}?organization_id=${a}&organization_id=${b}`, expect: [400, 403] },
          { what: "B by $in", method: "GET", url: `${url}?organization_id[$in][]=${b}`, expect: [400, 403] },
          // The organization is named or the request is a 400: never B's figures by another way.
          { what: "B by $or", method: "GET", url: `${url}?$or[0][organization_id]=${b}`, expect: [400] },
          { what: "B's webhook", method: "GET", url: `${url}?webhook_id=${encodeURIComponent(B.objs["/v1/webhooks"].id)}`, expect: [400] }
        ]
      }
    }
  },
  "/v1/consents/receipts/jwks": {
    why: "the platform's public keys of consent receipts, the same for every caller and open without a credential: no organization scope",
    attacks: { get: () => [{ what: "read", method: "GET", url: "/v1/consents/receipts/jwks", expect: [200] }] }
  },
  "/v1/keys/{id}/rotate-secret": {
    why: "an action on one key, whose new secret it shows: tried on B's keys (the seeded one, and the one B signs in with), " +
      "with and without a date, naming A in the query",
    attacks: {
      post: () => {
        const url = (id: string) => `/v1/keys/${encodeURIComponent(id)}/rotate-secret`
        const later = { previous_secret_expires_at: "2026-11-23T10:00:00.000Z" }
        return [
          { what: "B's key", method: "POST", url: url(B.objs["/v1/keys"].id), expect: [404], control: { url: url(A.objs["/v1/keys"].id), expect: 200 } },
          { what: "B's key, with a date", method: "POST", url: url(B.objs["/v1/keys"].id), body: later, expect: [404] },
          { what: "B's signed-in key", method: "POST", url: url(B.key.id), body: later, expect: [404] },
          { what: "B's key, naming A", method: "POST", url: `${url(B.key.id)}?organization_id=${encodeURIComponent(A.org.id)}`, expect: [404] }
        ]
      }
    }
  },
  "/v1/organizations/{id}/rotate-public-key": {
    // The control rotates A's own public key once: the walks of A's public key that follow use
    // the replaced key, accepted for 30 days by default.
    why: "an action on one organization, giving it a new public key: tried on B, with and without a date, naming A in the query",
    attacks: {
      post: () => {
        const url = (id: string) => `/v1/organizations/${encodeURIComponent(id)}/rotate-public-key`
        return [
          { what: "B", method: "POST", url: url(B.org.id), expect: [404], control: { url: url(A.org.id), expect: 200 } },
          { what: "B, with a date", method: "POST", url: url(B.org.id), body: { previous_key_expires_at: "2026-11-23T10:00:00.000Z" }, expect: [404] },
          { what: "B, naming A", method: "POST", url: `${url(B.org.id)}?organization_id=${encodeURIComponent(A.org.id)}`, expect: [404] }
        ]
      }
    }
  },
  "/v1/webhooks/deliveries/replay": {
    why: "an action on the deliveries of one webhook, named by its body",
    attacks: {
      post: () => [{
        what: "B's webhook",
        method: "POST",
        url: "/v1/webhooks/deliveries/replay",
        body: { webhook_id: B.objs["/v1/webhooks"].id },
        expect: [404],
        control: { url: "/v1/webhooks/deliveries/replay", body: { webhook_id: A.objs["/v1/webhooks"].id }, expect: 200 }
      }]
    }
  }
}

/** Routes the server serves that the OpenAPI document does not list (yet): walked too. */
const UNDOCUMENTED: Record<string, ReadonlyArray<Method>> = {}

/** What A's own object answers on a sub-path of an item (proves the route works at all). */
const SUB_PATH_CONTROL: Record<string, number> = {
  "GET /v1/consents/events/{id}/tcstring": 200,
  "GET /v1/consents/users/{id}/receipt": 200,
  "GET /v1/consents/proofs/{id}/file": 200,
  "GET /v1/consents/proof-reports/{id}/pdf": 200,
  // A's message is still pending: replaying it is a conflict, which still shows the route reached it.
  "POST /v1/webhooks/deliveries/{id}/replay": 409,
  // A's own webhook gets a new secret; B's (never rotated) reads back unchanged at the end.
  "POST /v1/webhooks/{id}/rotate-secret": 200
}

/**
 * Bodies a sub-path of an item is also walked with, beyond none: B's webhook rotated at once or
 * with the longest overlap must be refused as an unknown id, and its row (secrets included, as
 * its version shows) reads back unchanged.
 */
const SUB_PATH_BODIES: Record<string, ReadonlyArray<unknown>> = {
  "POST /v1/webhooks/{id}/rotate-secret": [{ overlap_s: 0 }, { overlap_s: 604_800 }]
}

interface Attack {
  /** The operation walked, as documented: "PATCH /v1/keys/{id}". */
  readonly op: string
  readonly what: string
  readonly method: string
  readonly url: string
  readonly body?: unknown
  readonly headers?: Record<string, string>
  readonly expect: ReadonlyArray<number>
  /** A 200 must be a page of the caller's organization's rows (`empty`: with none at all). */
  readonly page?: "mine" | "empty"
  /** The id of A's own object that an unfiltered find must list. */
  readonly ownId?: string
  /** A 200 page must hold only rows of this user (`organization_user_id`): what a consent token sees. */
  readonly onlyUser?: string
  /** Whether the answer must equal the one for unknown ids instead of B's (default true). */
  readonly compareUnknown?: boolean
  /** The same request on A's own objects, by A's API key: shows the refusal is the scope, not the input. */
  readonly control?: { readonly url: string; readonly body?: unknown; readonly expect: number }
}

const serviceOf = (method: Method, item: boolean): Service =>
  method === "get" ? (item ? "get" : "find") : method === "post" ? "create" : method === "put" ? "update" : method === "patch" ? "patch" : "remove"

const walkedPaths = (): Record<string, ReadonlyArray<Method>> => {
  const out: Record<string, Array<Method>> = {}
  for (const [p, ops] of Object.entries(doc.paths)) out[p] = Object.keys(ops) as Array<Method>
  for (const [p, methods] of Object.entries(UNDOCUMENTED)) out[p] = [...new Set([...(out[p] ?? []), ...methods])]
  return out
}

type Kind =
  | { readonly kind: "action" }
  | { readonly kind: "collection"; readonly coll: string }
  | { readonly kind: "item"; readonly coll: string; readonly rest: string }
  | { readonly kind: "uncovered" }

const classify = (template: string): Kind => {
  if (ACTIONS[template]) return { kind: "action" }
  if (FIXTURES[template]) return { kind: "collection", coll: template }
  const m = /^(.*)\/\{id\}(\/.*)?$/.exec(template)
  if (m && FIXTURES[m[1]!]) return { kind: "item", coll: m[1]!, rest: m[2] ?? "" }
  return { kind: "uncovered" }
}

/** The filterable fields of a find, from its documented `filter` parameter. */
const filterFields = (template: string): ReadonlyArray<string> => {
  const p = (doc.paths[template]?.get?.parameters ?? []).find((x: any) => x.name === "filter")
  const m = /Fields: (.*)$/.exec(p?.description ?? "")
  return m ? m[1]!.split(",").map((s: string) => s.trim()) : []
}

const isB = (v: unknown): v is string => typeof v === "string" && forbidden.includes(v)

/** Every request of the walk for one principal. */
const attacksFor = (who: Walker): Array<Attack> => {
  const out: Array<Attack> = []
  const attackCtx: Ctx = { org: B.org.id, objs: B.objs, mark: A.mark }
  const refsCtx: Ctx = { org: A.org.id, objs: B.objs, mark: A.mark }
  const controls = who === "api key"
  for (const [template, methods] of Object.entries(walkedPaths())) {
    const k = classify(template)
    for (const method of methods) {
      const opName = `${method.toUpperCase()} ${template}`
      const add = (a: Omit<Attack, "op">) => out.push({ op: opName, ...a, control: controls ? a.control : undefined })
      if (k.kind === "uncovered") continue
      if (k.kind === "action") {
        const action = ACTIONS[template]!
        if (action.once && who !== "api key") continue
        for (const a of action.attacks[method]?.() ?? []) add(a)
        continue
      }
      const f = FIXTURES[k.coll]!
      if (k.kind === "collection") {
        const only = f.operatorOnly?.includes(serviceOf(method, false)) === true
        if (method === "get") {
          const fields = filterFields(template)
          const owner = f.ownerField ?? "organization_id"
          const hasOwner = fields.includes(owner)
          if (only) {
            add({ what: "unfiltered", method: "GET", url: template, expect: [403] })
            if (hasOwner) add({ what: `${owner}=B`, method: "GET", url: `${template}?${owner}=${B.org.id}`, expect: [403] })
            continue
          }
          add({ what: "unfiltered", method: "GET", url: `${template}?$limit=1000`, expect: [200], page: "mine", ownId: A.objs[k.coll].id })
          if (hasOwner) {
            const b = encodeURIComponent(B.org.id)
            const a = encodeURIComponent(A.org.id)
            for (
              const q of [
                `${owner}=${b}`,
                `${owner}[$in][]=${b}`,
                `${owner}[$in][]=${a}&${owner}[$in][]=${b}`,
                `${owner}=${a}&${owner}=${b}`,
                `$or[0][${owner}]=${b}`,
                `$or[0][${owner}]=${a}&$or[1][${owner}]=${b}`
              ]
            ) add({ what: q, method: "GET", url: `${template}?${q}`, expect: [403] })
            for (const q of [`${owner}[$ne]=${a}`, `${owner}[$nin][]=${a}`]) {
              add({ what: q, method: "GET", url: `${template}?${q}`, expect: [200], page: "empty" })
            }
          }
          // Every filterable field whose value in B's object is B's own (ids, references, texts).
          const obj = B.objs[k.coll]
          for (const field of fields) {
            if (field === owner || !isB(obj[field])) continue
            const v = encodeURIComponent(obj[field])
            add({ what: `${field}=B's`, method: "GET", url: `${template}?${field}=${v}`, expect: [200], page: "empty" })
            add({ what: `${field}[$in]=B's`, method: "GET", url: `${template}?${field}[$in][]=${v}`, expect: [200], page: "empty" })
          }
          continue
        }
        if (method === "post") {
          for (const a of f.refAttacks?.post?.(who) ?? []) add(a)
          if ((f.createNotAnAttackFor as ReadonlyArray<Walker> | undefined)?.includes(who)) continue
          const body = f.create?.(attackCtx) ?? {}
          add({
            what: "into B",
            method: "POST",
            url: template,
            body,
            expect: [only ? 403 : f.intoB ?? 403],
            control: !only && f.create && f.createNotAnAttackFor === undefined ? { url: template, body: f.create(ctxOf(A)), expect: 201 } : undefined
          })
          const refs = f.create?.(refsCtx)
          if (refs && !only && !f.refsAreOwn && JSON.stringify(refs) !== JSON.stringify(body) && refersToB(refs)) {
            // In A, but referring to B's objects: refused, as if they did not exist (400 or 404),
            // or as a taken id (409) where the fixture says why.
            add({
              what: "in A, referring to B's objects",
              method: "POST",
              url: template,
              body: refs,
              expect: f.refsOracle ? [409] : [400, 404],
              compareUnknown: f.refsOracle === undefined
            })
          }
          continue
        }
        add({ what: "unsupported method on the collection", method: method.toUpperCase(), url: template, expect: [403, 404, 405] })
        continue
      }
      // An item of the collection, or a path under one.
      const only = f.operatorOnly?.includes(serviceOf(method, true)) === true
      const status = only ? 403 : 404
      const urlOf = (id: string) => template.replace("{id}", id)
      const bId = encodeURIComponent(B.objs[k.coll].id)
      const aId = encodeURIComponent(A.objs[k.coll].id)
      if (k.rest !== "") {
        const expected = SUB_PATH_CONTROL[opName]
        add({
          what: "B's id",
          method: method.toUpperCase(),
          url: urlOf(bId),
          expect: [status],
          control: expected === undefined ? undefined : { url: urlOf(aId), expect: expected }
        })
        for (const body of SUB_PATH_BODIES[opName] ?? []) {
          add({ what: `B's id, ${JSON.stringify(body)}`, method: method.toUpperCase(), url: urlOf(bId), body, expect: [status] })
        }
        continue
      }
      if (method === "get") {
        add({ what: "B's id", method: "GET", url: urlOf(bId), expect: [status], control: only ? undefined : { url: urlOf(aId), expect: 200 } })
        for (const alt of f.alsoNamedBy?.(B.objs[k.coll]) ?? []) add({ what: `B's object as ${alt}`, method: "GET", url: urlOf(alt), expect: [status] })
        continue
      }
      if (method === "delete") {
        add({ what: "B's id", method: "DELETE", url: urlOf(bId), expect: [status] })
        continue
      }
      for (const a of f.refAttacks?.[method]?.(who) ?? []) add(a)
      const make = method === "put" ? f.put : method === "patch" ? f.patch : undefined
      if (!make) continue // reported by the coverage test
      const body = make(attackCtx)
      add({
        what: "B's id",
        method: method.toUpperCase(),
        url: urlOf(bId),
        body,
        expect: [status],
        control: only ? undefined : { url: urlOf(aId), body: make(ctxOf(A)), expect: 200 }
      })
      if ("organization_id" in body) {
        add({ what: "B's id, organization_id A", method: method.toUpperCase(), url: urlOf(bId), body: { ...body, organization_id: A.org.id }, expect: [status] })
      }
    }
  }
  return out
}

/** The operations open to each end-user credential; every other one refuses it. */
const OPEN_TO: Record<EndUser, ReadonlySet<string>> = {
  "public key (header)": new Set(["POST /v1/consents/events", "GET /v1/consents/receipts/jwks"]),
  "public key (query)": new Set(["POST /v1/consents/events", "GET /v1/consents/receipts/jwks"]),
  "consent token": new Set([
    "GET /v1/consents/users/{id}",
    "GET /v1/consents/users/{id}/receipt",
    "GET /v1/consents/events",
    "POST /v1/consents/events",
    "GET /v1/consents/receipts/jwks"
  ])
}

/**
 * Operations of the organization's backend only (proofs, proof reports, the log): a consent token
 * is refused outright there, whatever the id, rather than read as not finding it.
 */
const BACKEND_ONLY = /^\w+ \/v1\/consents\/(proofs|proof-reports|log)(\/|$)/

const hmacHex = (key: string, message: string) => crypto.createHmac("sha256", key).update(message, "utf8").digest("hex")

/**
 * Every request of the walk for one of A's end-user credentials: the access tokens' requests,
 * refused (401 for the public key, 403 or 404 for the consent token) where the credential is not
 * open, as they are where it is; and, where it is, attempts at B's users and at A's other users.
 */
const endUserAttacksFor = (who: EndUser): Array<Attack> => {
  const ownUser = A.objs["/v1/consents/users"]
  const bUser = B.objs["/v1/consents/users"]
  const out = attacksFor(who).map((a): Attack => {
    if (!OPEN_TO[who].has(a.op)) {
      const refusal = who !== "consent token" ? [401] : BACKEND_ONLY.test(a.op) ? [403] : [403, 404]
      // Refused whatever an access token would get there: no page to read.
      return { ...a, expect: a.expect.includes(405) ? [...refusal, 405] : refusal, page: undefined, ownId: undefined }
    }
    if (who !== "consent token" || a.op !== "GET /v1/consents/events") return a
    // Its user's events whatever the filters: one naming B is refused as for A's access tokens, or finds none.
    const refused = a.expect.length === 1 && a.expect[0] === 403
    return { ...a, onlyUser: ownUser.organization_user_id, ...(refused ? { expect: [200, 403], page: "empty" as const } : {}) }
  })
  const consents = { purposes: [{ id: "1", enabled: true }] }
  const proofFile = dataUri("application/pdf", samplePdf(`${A.mark} agreed in the browser`))
  const write = (what: string, body: unknown, expect: ReadonlyArray<number>) =>
    out.push({ op: "POST /v1/consents/events", what, method: "POST", url: "/v1/consents/events", body, expect })
  const enc = encodeURIComponent
  if (who !== "consent token") {
    const bSecret = B.objs["/v1/secrets"]
    const signedBy = (digest: string) => ({
      organization_user_id: bUser.organization_user_id,
      organization_user_id_auth: { algorithm: "hmac-sha256", secret_id: bSecret.id, digest }
    })
    write("a guest of A", { user: { id: unique(`${A.mark}-guest`) }, consents }, [201])
    write("a guest of A, with an inline proof", { user: { id: unique(`${A.mark}-guest`) }, consents, proofs: [{ file: proofFile }] }, [201])
    write("B's user, signed with B's own secret", { organization_id: A.org.id, user: signedBy(hmacHex(bSecret.secret, bUser.organization_user_id)), consents }, [403])
    write("B's user, a guessed digest", { organization_id: A.org.id, user: signedBy("0".repeat(64)), consents }, [403])
    return out
  }
  const only = ownUser.organization_user_id as string
  const read = (op: string, what: string, url: string, expect: ReadonlyArray<number>, extra: Partial<Attack> = {}) =>
    out.push({ op, what, method: "GET", url, expect, ...extra })
  write("its own user", { organization_id: A.org.id, user: { organization_user_id: only }, consents }, [201])
  write("its own user, with an inline proof", { organization_id: A.org.id, user: { organization_user_id: only }, consents, proofs: [{ file: proofFile }] }, [201])
  write("B's user's organization_user_id", { organization_id: A.org.id, user: { organization_user_id: bUser.organization_user_id }, consents }, [403])
  write("B's user's id", { organization_id: A.org.id, user: { id: bUser.id }, consents }, [400, 403])
  write("another user of A", { organization_id: A.org.id, user: { organization_user_id: secondUserOfA.organization_user_id }, consents }, [403])
  read("GET /v1/consents/users/{id}", "its own user", `/v1/consents/users/${enc(ownUser.id)}`, [200], { onlyUser: only })
  read("GET /v1/consents/users/{id}", "its own user by the organization's id", `/v1/consents/users/${enc(only)}?$by_organization_user_id=true`, [200], { onlyUser: only })
  read("GET /v1/consents/users/{id}", "another user of A", `/v1/consents/users/${enc(secondUserOfA.id)}`, [404])
  read("GET /v1/consents/users/{id}", "another user of A by the organization's id", `/v1/consents/users/${enc(secondUserOfA.organization_user_id)}?$by_organization_user_id=true`, [404])
  const receipt = "GET /v1/consents/users/{id}/receipt"
  read(receipt, "its own user's receipt", `/v1/consents/users/${enc(ownUser.id)}/receipt`, [200], { onlyUser: only })
  read(receipt, "its own user's receipt by the organization's id", `/v1/consents/users/${enc(only)}/receipt?$by_organization_user_id=true`, [200], { onlyUser: only })
  read(receipt, "another user of A's receipt", `/v1/consents/users/${enc(secondUserOfA.id)}/receipt`, [404])
  read(receipt, "another user of A's receipt by the organization's id", `/v1/consents/users/${enc(secondUserOfA.organization_user_id)}/receipt?$by_organization_user_id=true`, [404])
  read(receipt, "B's user's receipt by the organization's id", `/v1/consents/users/${enc(bUser.organization_user_id)}/receipt?$by_organization_user_id=true`, [404])
  read("GET /v1/consents/events", "another user of A's events", `/v1/consents/events?user_id=${enc(secondUserOfA.id)}`, [200], { page: "empty" })
  read("GET /v1/consents/events", "by cursor", "/v1/consents/events?$cursor=&$limit=1000", [200], { onlyUser: only })
  read("GET /v1/consents/events", "B's user's events by cursor", `/v1/consents/events?$cursor=&user_id=${enc(bUser.id)}`, [200], { onlyUser: only })
  return out
}

const errorKinds: Record<number, readonly [string, string]> = {
  400: ["BadRequest", "bad-request"],
  401: ["NotAuthenticated", "not-authenticated"],
  403: ["Forbidden", "forbidden"],
  404: ["NotFound", "not-found"],
  405: ["MethodNotAllowed", "method-not-allowed"],
  409: ["Conflict", "conflict"],
  413: ["PayloadTooLarge", "payload-too-large"],
  429: ["TooManyRequests", "too-many-requests"]
}

/** What is wrong with an error answer, measured against the contract's error body. */
const contractProblems = (r: Reply): Array<string> => {
  if (r.status < 400) return []
  const kind = errorKinds[r.status]
  const b = r.body
  const problems: Array<string> = []
  if (!kind) problems.push(`status ${r.status} is not in the contract`)
  if (typeof b !== "object" || b === null) return [...problems, `error body is not JSON: ${r.text.slice(0, 100)}`]
  if (kind && (b.name !== kind[0] || b.className !== kind[1])) problems.push(`name/className ${b.name}/${b.className}`)
  if (b.code !== r.status) problems.push(`code ${b.code}`)
  if (typeof b.message !== "string") problems.push("message is not a string")
  if (typeof b.errors !== "object" || b.errors === null || Array.isArray(b.errors)) problems.push("errors is not an object")
  if (!r.headers.get("x-request-id")) problems.push("no x-request-id")
  if (/\bat .+\(.*:\d+:\d+\)|SQLITE_|SqlError|better-sqlite3/i.test(r.text)) problems.push("stack trace or SQL in the body")
  return problems
}

/** B's strings in an answer, other than those the request itself carried (an echoed id is no leak). */
const leaksIn = (r: Reply, sent: string): Array<string> => {
  const headers: Array<string> = []
  r.headers.forEach((v, k) => headers.push(`${k}: ${v}`))
  const seen = r.text + " " + headers.join("\n")
  return forbidden.filter((s) => seen.includes(s) && !sent.includes(s))
}

/** The request with every B string it carries replaced by an id that does not exist. */
const unknownVersion = (a: Attack) => {
  let url = a.url
  let body = a.body === undefined ? undefined : JSON.stringify(a.body)
  let headers = a.headers === undefined ? undefined : JSON.stringify(a.headers)
  for (const s of [...forbidden].sort((x, y) => y.length - x.length)) {
    // Fresh every time: a request that succeeds with an unknown id must not make it known.
    const replacement = unique("zz-unknown")
    for (const form of new Set([s, encodeURIComponent(s)])) {
      if (url.includes(form)) url = url.split(form).join(replacement)
    }
    if (body?.includes(s)) body = body.split(JSON.stringify(s).slice(1, -1)).join(replacement)
    if (headers?.includes(s)) headers = headers.split(s).join(replacement)
  }
  const changed = url !== a.url || body !== (a.body === undefined ? undefined : JSON.stringify(a.body)) ||
    headers !== (a.headers === undefined ? undefined : JSON.stringify(a.headers))
  return changed
    ? { url, body: body === undefined ? undefined : JSON.parse(body), headers: headers === undefined ? undefined : JSON.parse(headers) }
    : undefined
}

const send = (token: string, method: string, url: string, body?: unknown, headers?: Record<string, string>) =>
  call(server.url, method, url, { token, ...(body === undefined ? {} : { body }), ...(headers === undefined ? {} : { headers }) })

/** A request as one of A's principals: a bearer token, or A's public key in its header or in the query. */
const sendAs = (who: Walker, method: string, url: string, body?: unknown, headers?: Record<string, string>) => {
  const key = principals[who]
  const withBody = body === undefined ? {} : { body }
  if (who === "public key (header)") return call(server.url, method, url, { ...withBody, headers: { ...headers, "x-public-api-key": key } })
  if (who === "public key (query)") {
    const at = `${url}${url.includes("?") ? "&" : "?"}public_api_key=${encodeURIComponent(key)}`
    return call(server.url, method, at, { ...withBody, ...(headers === undefined ? {} : { headers }) })
  }
  return send(key, method, url, body, headers)
}

/** Runs one principal's walk; returns every problem found (empty when isolation holds). */
const walk = async (who: Walker, attacks: ReadonlyArray<Attack>): Promise<Array<string>> => {
  const problems: Array<string> = []
  for (const a of attacks) {
    const label = `${who}: ${a.op} [${a.what}] ${a.method} ${a.url}`
    const r = await sendAs(who, a.method, a.url, a.body, a.headers)
    const sent = safeDecode(a.url) + " " + a.url + " " + JSON.stringify(a.body ?? null) + " " + JSON.stringify(a.headers ?? null)
    if (!a.expect.includes(r.status)) problems.push(`${label}: ${r.status} (expected ${a.expect.join(" or ")}): ${r.text.slice(0, 200)}`)
    for (const p of contractProblems(r)) problems.push(`${label}: ${p}`)
    const leaked = leaksIn(r, sent)
    if (leaked.length > 0) problems.push(`${label}: answer contains B's ${leaked.map((s) => JSON.stringify(s.slice(0, 60))).join(", ")}`)
    if (r.status === 200 && a.page !== undefined) {
      const rows = r.body?.data
      if (!Array.isArray(rows) || typeof r.body.total !== "number") problems.push(`${label}: not a page`)
      else {
        if (a.page === "empty" && (rows.length > 0 || r.body.total > 0)) problems.push(`${label}: ${r.body.total} rows (expected none)`)
        const others = rows.filter((x: any) => "organization_id" in x && x.organization_id !== A.org.id)
        if (others.length > 0) problems.push(`${label}: rows of another organization: ${others.map((x: any) => x.id).join(", ")}`)
        if (a.ownId !== undefined && !rows.some((x: any) => x.id === a.ownId)) problems.push(`${label}: A's own ${a.ownId} is not listed`)
      }
    }
    if (r.status === 200 && a.onlyUser !== undefined) {
      // A receipt names its user and organization inside it.
      const rows: Array<any> = (Array.isArray(r.body?.data) ? r.body.data : [r.body]).map((x: any) =>
        x?.receipt === undefined ? x : { organization_id: x.receipt.controller?.id, organization_user_id: x.receipt.organization_user_id }
      )
      for (const x of rows) {
        const user = x?.user?.organization_user_id ?? x?.organization_user_id
        if (x?.organization_id !== A.org.id || user !== a.onlyUser) problems.push(`${label}: a row of another user: ${JSON.stringify(x).slice(0, 200)}`)
      }
    }
    // B's id answers exactly like an id that does not exist.
    const u = a.compareUnknown === false ? undefined : unknownVersion(a)
    if (u) {
      const ru = await sendAs(who, a.method, u.url, u.body, u.headers)
      const same = ru.status === r.status && ru.body?.name === r.body?.name &&
        (r.status !== 400 || JSON.stringify(Object.keys(ru.body?.errors ?? {}).sort()) === JSON.stringify(Object.keys(r.body?.errors ?? {}).sort())) &&
        (r.status !== 200 || ru.body?.total === r.body?.total)
      if (!same) problems.push(`${label}: answers ${r.status} ${r.text.slice(0, 120)} but for an unknown id ${ru.status} ${ru.text.slice(0, 120)}`)
    }
    if (a.control) {
      const rc = await sendAs(who, a.method, a.control.url, a.control.body)
      if (rc.status !== a.control.expect) {
        problems.push(`${label}: control on A's own object ${a.method} ${a.control.url} answered ${rc.status}, expected ${a.control.expect}: ${rc.text.slice(0, 200)}`)
      }
    }
  }
  return problems
}

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

const stringsOf = (v: unknown, out: Set<string>): Set<string> => {
  if (typeof v === "string") out.add(v)
  else if (Array.isArray(v)) for (const x of v) stringsOf(x, out)
  else if (typeof v === "object" && v !== null) for (const x of Object.values(v)) stringsOf(x, out)
  return out
}

/** How B's object of a collection is read back: by B, or by the operator for operator-only registries. */
const readBack = async (coll: string) => {
  const f = FIXTURES[coll]!
  const id = B.objs[coll].id
  if (doc.paths[`${coll}/{id}`]?.get) {
    const by = f.operatorOnly?.includes("get") ? op.call : B.call
    const r = await by("GET", `${coll}/${encodeURIComponent(id)}`)
    return { status: r.status, body: r.body }
  }
  const r = await B.call("GET", `${coll}?id=${encodeURIComponent(id)}`)
  return { status: r.status, body: r.body.data }
}

const totalOf = async (coll: string) => {
  const f = FIXTURES[coll]!
  const owner = f.ownerField ?? "organization_id"
  const r = f.operatorOnly?.includes("find")
    ? await op.call("GET", `${coll}?${owner}=${B.org.id}&$limit=0`)
    : await B.call("GET", `${coll}?$limit=0`)
  expect(r.status, `${coll}: ${r.text}`).toBe(200)
  return r.body.total as number
}

// Registered before the server's hooks: the exports directory is there before it starts and goes after it stops.
beforeAll(() => {
  exportsRoot = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-isolation-walk-"))
})
afterAll(() => {
  if (exportsRoot) fs.rmSync(exportsRoot, { recursive: true, force: true })
})
/** The walk's public writes come from one address: no rate limit should answer them. */
const unlimited = { publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 } }
const { server, op } = useServer(() => ({ webhookAllowHosts: ["127.0.0.1"], exportsRoot, tcfVendorList: vendorList, ...unlimited }))

beforeAll(async () => {
  doc = (await call(server.url, "GET", "/openapi.json")).body
  const org = async (label: string): Promise<Org> => {
    const t = await op.tenant()
    const mark = `zq${label.toLowerCase()}${Math.random().toString(36).slice(2, 10)}`
    return { label, ...t, call: as(server.url, t.token), mark, objs: {} }
  }
  A = await org("A")
  B = await org("B")
  for (const o of [A, B]) {
    for (const [coll, f] of Object.entries(FIXTURES)) {
      const operatorCreates = f.operatorOnly?.includes("create") === true
      o.objs[coll] = f.seed
        ? await f.seed(o)
        : await created(operatorCreates ? op.call : o.call, coll, f.create!(ctxOf(o)))
      expect(o.objs[coll]?.id, `${o.label} ${coll}`).toBeTruthy()
    }
  }

  // A's other principals: a member of A only, and a platform integration of A.
  principals["api key"] = A.token
  const invited = await created(A.call, "/v1/members", { organization_id: A.org.id, name: "Walker", email: `${A.mark}-walker@example.com` })
  const accepted = await call(server.url, "POST", "/v1/invitations/accept", { body: { token: invited.invitation.token, password: "long enough password" } })
  expect(accepted.status, accepted.text).toBe(201)
  principals.member = accepted.body.access_token
  const integration = await created(op.call, "/v1/platform-integrations", { organization_id: A.org.id, name: "A's shop plugin" })
  const session = await call(server.url, "POST", "/v1/platform-integrations/sessions", { headers: { "x-platform-authorization": integration.token } })
  expect(session.status, session.text).toBe(201)
  principals["platform integration"] = session.body.access_token
  // A's end-user credentials: its public key, and a consent token of its seeded user.
  principals["public key (header)"] = A.org.public_api_key
  principals["public key (query)"] = A.org.public_api_key
  secondUserOfA = await created(A.call, "/v1/consents/users", {
    organization_id: A.org.id,
    organization_user_id: `${A.mark}-second`,
    consents: { purposes: [{ id: "1", enabled: true }] }
  })
  const granted = await A.call("POST", "/v1/consents/tokens", {
    body: { organization_id: A.org.id, organization_user_id: A.objs["/v1/consents/users"].organization_user_id, lifetime: 2_678_400 }
  })
  if (granted.status === 201) principals["consent token"] = granted.body.id_token
  else consentTokenProblem = `POST /v1/consents/tokens: ${granted.status} ${granted.text.slice(0, 200)}`

  // B's own strings: everything seeded in B (including values shown once) that A has not got too.
  const mine = stringsOf([A.org, A.key, A.secret, A.token, A.objs, invited, integration, principals], new Set())
  const theirs = stringsOf([B.org, B.key, B.secret, B.token, B.objs], new Set())
  forbidden = [...theirs].filter((s) => s.length >= 6 && !mine.has(s) && !iso.test(s))
  logOfB = (await B.call("GET", "/v1/consents/log/verify")).body
  expect(logOfB, "B's log after seeding").toMatchObject({ valid: true, first_invalid: null })
  expect(logOfB.entries).toBeGreaterThan(0)
  forbidden.push(B.mark, invitationIdOf(B), logOfB.head)
  expect(forbidden).toContain(B.org.id)
  expect(forbidden).toContain(B.secret)
  expect(forbidden).toContain(B.objs["/v1/webhooks"].signing_secret)
  expect(forbidden).toContain(B.objs["/v1/platform-integrations"].token)
  expect(forbidden).toContain(B.objs["/v1/consents/proofs"].sha256)
  expect(forbidden).toContain(B.objs["/v1/consents/proof-reports"].sha256)

  for (const coll of Object.keys(FIXTURES)) {
    snapshot[coll] = await readBack(coll)
    totals[coll] = await totalOf(coll)
  }
}, 120_000)


describe("tenant isolation, walked from the OpenAPI document", () => {
  it("every path and method of the document is covered by a fixture of B or the commented allow-list", () => {
    const problems: Array<string> = []
    const paths = walkedPaths()
    for (const [template, methods] of Object.entries(paths)) {
      const k = classify(template)
      if (k.kind === "uncovered") {
        problems.push(`${template}: no fixture for its collection and not in the allow-list of actions`)
        continue
      }
      for (const m of methods) {
        if (!["get", "post", "put", "patch", "delete"].includes(m)) problems.push(`${m.toUpperCase()} ${template}: method not walked`)
        if (k.kind === "action" && !ACTIONS[template]!.attacks[m]) problems.push(`${m.toUpperCase()} ${template}: no attack in the allow-list entry`)
        if (k.kind === "item" && k.rest === "" && (m === "put" || m === "patch")) {
          const f = FIXTURES[k.coll]!
          if (!(m === "put" ? f.put : f.patch)) problems.push(`${m.toUpperCase()} ${template}: the fixture has no ${m} body`)
        }
        if (k.kind === "collection" && m === "post" && !FIXTURES[template]!.create) problems.push(`POST ${template}: the fixture has no create body`)
      }
    }
    // No stale entries either: every fixture and allow-list entry is a served path.
    for (const coll of Object.keys(FIXTURES)) if (!doc.paths[coll]) problems.push(`fixture ${coll} is not a path of the document`)
    for (const p of Object.keys(ACTIONS)) if (!paths[p]) problems.push(`allow-list entry ${p} is not a path of the document`)
    for (const p of Object.keys(UNDOCUMENTED)) {
      if (doc.paths[p]) problems.push(`${p} is documented now: remove it from UNDOCUMENTED`)
    }
    expect(problems).toEqual([])
    // Every collection of the document with a find is one of B's fixtures or an action.
    const collections = Object.keys(doc.paths).filter((p) => !p.includes("{") && doc.paths[p]!.get)
    expect(collections.filter((p) => !FIXTURES[p] && !ACTIONS[p])).toEqual([])
    const operations = Object.values(paths).reduce((n, ms) => n + ms.length, 0)
    expect(operations).toBeGreaterThan(100)
  })

  for (const who of ["api key", "member", "platform integration"] as const) {
    it(`${who} of A: every operation on B is refused (contract error body, same as an unknown id) and reveals nothing of B`, async () => {
      const attacks = attacksFor(who)
      expect(attacks.length).toBeGreaterThan(150)
      // Every documented operation is walked at least once.
      const walked = new Set(attacks.map((a) => a.op))
      for (const [template, methods] of Object.entries(walkedPaths())) {
        for (const m of methods) {
          const opName = `${m.toUpperCase()} ${template}`
          const skipped = (ACTIONS[template]?.once && who !== "api key") ||
            (m === "post" && FIXTURES[template]?.createNotAnAttackFor?.includes(who))
          if (!skipped) expect(walked, opName).toContain(opName)
        }
      }
      expect(await walk(who, attacks)).toEqual([])
    }, 300_000)
  }

  for (const who of END_USERS) {
    it(`${who} of A: refused wherever it is not open; where it is, A's data and its own user only, nothing of B`, async () => {
      expect(A.org.public_api_key).toMatch(/^pk_/)
      if (who === "consent token") expect(consentTokenProblem).toBeUndefined()
      const attacks = endUserAttacksFor(who)
      const walked = new Set(attacks.map((a) => a.op))
      for (const [template, methods] of Object.entries(walkedPaths())) {
        // Credential exchanges take their credential from the body or their own header.
        if (ACTIONS[template]?.once) continue
        for (const m of methods) expect(walked, `${m.toUpperCase()} ${template}`).toContain(`${m.toUpperCase()} ${template}`)
      }
      expect(await walk(who, attacks)).toEqual([])
    }, 300_000)
  }

  it("the same client-chosen id held by A and B: every operation of A's principals on it reaches A's object only", async () => {
    // A's event and user take the ids of B's (a consent event names its user by id).
    const events = "/v1/consents/events"
    const users = "/v1/consents/users"
    const ownedBy = FIXTURES[events]!.create!({ ...ctxOf(A), objs: { ...A.objs, [users]: B.objs[users] } })
    const mine = await created(A.call, events, { ...ownedBy, id: B.objs[events].id })
    expect(mine).toMatchObject({ id: B.objs[events].id, organization_id: A.org.id, user: { id: B.objs[users].id } })
    const problems: Array<string> = []
    const item = (coll: string) =>
      Object.entries(doc.paths).filter(([template]) => template.startsWith(`${coll}/{id}`))
    for (const who of ["api key", "member", "platform integration"] as const) {
      const token = principals[who]
      for (const coll of [events, users]) {
        const id = encodeURIComponent(B.objs[coll].id)
        for (const [template, ops] of item(coll)) {
          for (const method of Object.keys(ops).filter((m) => m === "get" || m === "patch")) {
            const body = method === "patch" ? FIXTURES[coll]!.patch!(ctxOf(A)) : undefined
            const r = await send(token, method.toUpperCase(), template.replace("{id}", id), body)
            const label = `${who}: ${method.toUpperCase()} ${template}`
            if (r.status !== 200) problems.push(`${label}: ${r.status} ${r.text.slice(0, 200)}`)
            else if (template === `${coll}/{id}` && r.body.organization_id !== A.org.id) problems.push(`${label}: ${r.text.slice(0, 200)}`)
            // The ids A chose for its own event and user are A's too now: no leak when echoed.
            const leaked = leaksIn(r, template.replace("{id}", id) + JSON.stringify(body ?? null) + JSON.stringify(mine))
            if (leaked.length > 0) problems.push(`${label}: answer contains B's ${leaked.join(", ")}`)
          }
        }
      }
    }
    // Deleting A's user (which takes its events) leaves B's alone: the next test reads them back.
    const removed = await A.call("DELETE", `${users}/${encodeURIComponent(B.objs[users].id)}`)
    if (removed.status !== 200) problems.push(`DELETE A's user: ${removed.status} ${removed.text.slice(0, 200)}`)
    expect(problems).toEqual([])
    expect((await A.call("GET", `${events}/${encodeURIComponent(B.objs[events].id)}`)).status).toBe(404)
  })

  it("B's objects read back unchanged, and B's collections hold as many rows as before", async () => {
    const changed: Array<string> = []
    for (const coll of Object.keys(FIXTURES)) {
      const now = await readBack(coll)
      if (JSON.stringify(now) !== JSON.stringify(snapshot[coll])) {
        changed.push(`${coll}: ${JSON.stringify(snapshot[coll]).slice(0, 300)} -> ${JSON.stringify(now).slice(0, 300)}`)
      }
      const total = await totalOf(coll)
      if (total !== totals[coll]) changed.push(`${coll}: ${totals[coll]} rows -> ${total}`)
    }
    // Nothing was written in B's name: its consent log has the same entries and head, and still verifies.
    const log = await B.call("GET", "/v1/consents/log/verify")
    if (JSON.stringify(log.body) !== JSON.stringify(logOfB)) changed.push(`B's log: ${JSON.stringify(logOfB)} -> ${log.text}`)
    // No rotation reached B's credentials: the key B signs in with is as made, and its secret opens sessions.
    const { secret: _, ...keyOfB } = B.key
    const keyNow = await B.call("GET", `/v1/keys/${encodeURIComponent(B.key.id)}`)
    if (JSON.stringify(keyNow.body) !== JSON.stringify(keyOfB)) changed.push(`B's key: ${JSON.stringify(keyOfB)} -> ${keyNow.text}`)
    const session = await call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key: B.key.id, secret: B.secret } })
    if (session.status !== 201) changed.push(`B's secret: ${session.status} ${session.text.slice(0, 200)}`)
    const orgNow = (await B.call("GET", `/v1/organizations/${encodeURIComponent(B.org.id)}`)).body
    if (orgNow.public_api_key !== B.org.public_api_key || orgNow.previous_key_expires_at !== null) changed.push(`B's public key: ${JSON.stringify(orgNow)}`)
    expect(changed).toEqual([])
  })

  it("premium features stay per organization: C without them is refused while A and B use theirs, and a change for C is C's alone", async () => {
    // The services gated by a premium feature (decisions: webhooks, consents, SSO connections).
    const gated = [
      "/v1/webhooks",
      "/v1/webhooks/deliveries",
      // Named by each caller as its own organization.
      "/v1/webhooks/deliveries/stats?organization_id={org}",
      "/v1/consents/events",
      "/v1/consents/users",
      "/v1/consents/proofs",
      "/v1/consents/proof-reports",
      "/v1/consents/log/verify",
      "/v1/sso-connections"
    ]
    const t = await op.tenant()
    const C: Org = { label: "C", ...t, call: as(server.url, t.token), mark: `zqc${Math.random().toString(36).slice(2, 10)}`, objs: {} }
    const status = async (o: Org, url: string) => (await o.call("GET", url.replace("{org}", encodeURIComponent(o.org.id)))).status
    for (const url of gated) {
      // A and B use the service (and warm whatever is kept of their flags) right before C asks.
      expect(await status(A, url), `A ${url}`).toBe(200)
      expect(await status(B, url), `B ${url}`).toBe(200)
      expect(await status(C, url), `C ${url}`).toBe(403)
    }
    for (const coll of ["/v1/webhooks", "/v1/consents/users", "/v1/sso-connections"]) {
      const r = await C.call("POST", coll, { body: FIXTURES[coll]!.create!(ctxOf(C)) })
      expect(r.status, `C POST ${coll}: ${r.text}`).toBe(403)
    }
    const flags = await op.featuresOf(C.org.id)
    const on = await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: true } })
    expect(on.status, on.text).toBe(200)
    expect(await status(C, "/v1/consents/events")).toBe(200)
    expect(await status(C, "/v1/consents/log/verify")).toBe(200)
    // Proofs and their reports are a feature of their own.
    expect(await status(C, "/v1/consents/proofs")).toBe(403)
    expect(await status(C, "/v1/consents/proof-reports")).toBe(403)
    expect(await status(C, "/v1/webhooks")).toBe(403)
    const off = await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: false } })
    expect(off.status, off.text).toBe(200)
    expect(await status(C, "/v1/consents/events")).toBe(403)
    expect(await status(A, "/v1/consents/events")).toBe(200)
    expect(await status(B, "/v1/consents/events")).toBe(200)
  })

  it("an in-process subscriber's messages of A's changes are the host's: no principal of A reaches them", async () => {
    const name = `walk-${A.mark}`
    await server.api.runtime.runPromise(saveSubscriber(name, {}))
    try {
      const event = FIXTURES["/v1/consents/events"]!.create!({ ...ctxOf(A), objs: A.objs })
      await created(A.call, "/v1/consents/events", { ...event, id: unique("subscribed") })
      const target = encodeURIComponent(`subscriber:${name}`)
      const listed = await op.call("GET", `/v1/webhooks/deliveries?organization_id=${A.org.id}&webhook_id=${target}`)
      expect(listed.status, listed.text).toBe(200)
      expect(listed.body.total).toBeGreaterThan(0)
      const message = listed.body.data[0]
      const problems: Array<string> = []
      for (const who of ["api key", "member", "platform integration"] as const) {
        const token = principals[who]
        const found = await send(token, "GET", `/v1/webhooks/deliveries?webhook_id=${target}`)
        if (found.status !== 200 || found.body.total !== 0) problems.push(`${who}: find ${found.status} ${found.text.slice(0, 200)}`)
        const all = await send(token, "GET", "/v1/webhooks/deliveries?$limit=1000")
        if (all.body.data?.some((d: any) => d.webhook_id.startsWith("subscriber:"))) problems.push(`${who}: listed a subscriber's message`)
        for (const [method, url] of [["GET", ""], ["POST", "/replay"]] as const) {
          const r = await send(token, method, `/v1/webhooks/deliveries/${message.id}${url}`)
          const unknown = await send(token, method, `/v1/webhooks/deliveries/msg_${A.mark}${url}`)
          if (r.status !== 404 || r.text.replace(message.id, "") !== unknown.text.replace(`msg_${A.mark}`, "")) {
            problems.push(`${who}: ${method} ${url || "get"}: ${r.status} ${r.text.slice(0, 200)}`)
          }
        }
        // A's own message, with B named in the query: still A's message (pending: 409), no other scope.
        const own = A.objs["/v1/webhooks/deliveries"]
        const replay = await send(token, "POST", `/v1/webhooks/deliveries/${own.id}/replay?organization_id=${B.org.id}`)
        if (replay.status !== 409) problems.push(`${who}: replay of A's message naming B: ${replay.status} ${replay.text.slice(0, 200)}`)
        const theirs = await send(token, "POST", `/v1/webhooks/deliveries/${B.objs["/v1/webhooks/deliveries"].id}/replay?organization_id=${A.org.id}`)
        if (theirs.status !== 404) problems.push(`${who}: replay of B's message naming A: ${theirs.status} ${theirs.text.slice(0, 200)}`)
      }
      expect(problems).toEqual([])
      const after = await op.call("GET", `/v1/webhooks/deliveries/${message.id}`)
      expect(after.body).toMatchObject({ status: message.status, version: message.version })
    } finally {
      await server.api.runtime.runPromise(deleteSubscriber(name))
    }
  })
})

/**
 * The hosted pages are public, so isolation there is about hosts: A's proven page host shows A's
 * page, and asked for B's centers, B's other ids or B's names, answers the one 404 page with
 * nothing of B in it, even once B's center names A's host. Run after the walk's read-back, since
 * B gets a center of its own here.
 */
describe("tenant isolation of the hosted pages", () => {
  it("A's page host never shows B's page or anything of B; B's center is served by its id elsewhere", async () => {
    const hostOfA = `${A.mark}-${unique("pages")}.example.com`
    const centerOfA = A.objs["/v1/privacy-centers"]
    const made = await A.call("POST", "/v1/domains", { body: { id: hostOfA, organization_id: A.org.id, usage: "privacy-center", entity_id: centerOfA.id } })
    expect(made.status, made.text).toBe(201)
    expect((await op.call("PATCH", `/v1/domains/${hostOfA}`, { body: { status: "ready" } })).status).toBe(200)
    const claim = await B.call("POST", "/v1/privacy-centers", {
      body: { organization_id: B.org.id, name: `${B.mark} claims A's host`, custom_domains: [hostOfA], display_cookies: "list" }
    })
    expect(claim.status, claim.text).toBe(201)
    try {
      const onA = (path: string) => getPage(server.url, path, { host: hostOfA })
      const home = await onA("/")
      expect(home.status, home.text).toBe(200)
      expect(home.text).toContain(A.mark)
      const unknown = await onA(`/privacy/${A.mark}-nothing`)
      expect(unknown.status).toBe(404)
      const idsOfB = [claim.body.id, ...Object.values(B.objs).map((o: any) => o?.id).filter((id): id is string => typeof id === "string"), B.org.id]
      const problems: Array<string> = []
      for (const id of idsOfB) {
        for (const path of [`/privacy/${encodeURIComponent(id)}`, `/privacy/${encodeURIComponent(id)}/style.css`, `/?lang=${encodeURIComponent(id)}`]) {
          const r = await onA(path)
          const seen = `${r.text} ${JSON.stringify(r.headers)}`
          const leaked = forbidden.filter((s) => seen.includes(s) && !path.includes(encodeURIComponent(s)))
          if (leaked.length > 0) problems.push(`${path}: ${leaked.join(", ")}`)
          if (path.startsWith("/privacy/") && (r.status !== 404 || r.text !== unknown.text)) problems.push(`${path}: ${r.status}`)
        }
      }
      for (const path of ["/", "/robots.txt"]) {
        const r = await onA(path)
        const leaked = forbidden.filter((s) => `${r.text} ${JSON.stringify(r.headers)}`.includes(s))
        if (leaked.length > 0) problems.push(`${path}: ${leaked.join(", ")}`)
      }
      expect(problems).toEqual([])
      // B's own center by its id, on the API's host: B's page.
      const theirs = await getPage(server.url, `/privacy/${claim.body.id}`)
      expect(theirs.status).toBe(200)
      expect(theirs.text).toContain(B.mark)
    } finally {
      await B.call("DELETE", `/v1/privacy-centers/${claim.body.id}`)
      await A.call("DELETE", `/v1/domains/${hostOfA}`)
    }
  })
})

/**
 * Persons are shared by every organization, and an invitation's token is handed to the inviter.
 * A client of A that invites B's pending invitee into A, and accepts that invitation with a
 * password of its choosing, must still get nothing of B: a membership counts only once its own
 * invitation is accepted (docs/decisions.md).
 */
describe("an invitation into A does not open B's pending membership", () => {
  it("accepting A's invitation for a person invited into B gives no access to B", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const email = `${unique("invitee")}@b-company.example`
    const toB = await as(server.url, b.token)("POST", "/v1/members", { body: { organization_id: b.org.id, name: "Bob", email } })
    expect(toB.status, toB.text).toBe(201)
    const secretOfB = await created(as(server.url, b.token), "/v1/secrets", { organization_id: b.org.id, name: unique("b-only") })
    const toA = await as(server.url, a.token)("POST", "/v1/members", { body: { organization_id: a.org.id, name: "x", email } })
    expect(toA.status, toA.text).toBe(201)
    const hijack = await call(server.url, "POST", "/v1/invitations/accept", { body: { token: toA.body.invitation.token, password: "chosen by A's admin" } })
    expect(hijack.status, hijack.text).toBe(201)
    {
      const asHijacker = as(server.url, hijack.body.access_token)
      const orgs = await asHijacker("GET", "/v1/organizations")
      expect(orgs.body.data.map((o: { id: string }) => o.id)).not.toContain(b.org.id)
      expect((await asHijacker("GET", `/v1/secrets/${secretOfB.id}`)).status).toBe(404)
      expect((await asHijacker("POST", "/v1/keys", { body: { organization_id: b.org.id, name: unique("backdoor") } })).status).toBe(403)
      // Nor does an email session opened with the password A chose.
      const login = await call(server.url, "POST", "/v1/sessions", { body: { type: "email", key: email, secret: "chosen by A's admin" } })
      expect(login.status, login.text).toBe(201)
      const viaLogin = as(server.url, login.body.access_token)
      expect((await viaLogin("GET", `/v1/secrets/${secretOfB.id}`)).status).toBe(404)
      expect((await viaLogin("GET", "/v1/organizations")).body.data.map((o: { id: string }) => o.id)).toEqual([a.org.id])
    }
  })
})
