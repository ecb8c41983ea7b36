import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SsoConnection, SsoConnectionCreate, SsoConnectionUpdate } from "../Domain/Account.js"
import { InvalidInput } from "../Domain/Errors.js"
import { nowMillis } from "../Engine/Clock.js"
import { CertificateValidator } from "./CertificateValidator.js"
import { Storage } from "../Engine/Ports.js"
import { randomToken } from "../Engine/Random.js"
import { defineResource } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { Tables } from "./AccountTables.js"

/** The PEM must parse as an X.509 certificate that has not expired (checked by the adapter's port). */
const checkCertificate = (pem: string) =>
  Effect.gen(function*() {
    const validator = yield* CertificateValidator
    const problem = yield* validator.check(pem, yield* nowMillis)
    if (Option.isSome(problem)) {
      return yield* Effect.fail(new InvalidInput({
        message: `Invalid idp_certificate: ${problem.value}`,
        errors: { idp_certificate: problem.value }
      }))
    }
  })

const privateKeyBlock = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/

/**
 * Every string of a body, at any depth, that holds a PEM private key block (`PRIVATE KEY`,
 * `RSA PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, ...): an identity provider's key must never be
 * sent to us, so it is refused before anything reads, stores or echoes it.
 */
export const privateKeyFields = (body: unknown, path = ""): Record<string, string> => {
  const out: Record<string, string> = Object.create(null)
  const walk = (v: unknown, at: string, depth: number): void => {
    if (typeof v === "string") {
      if (privateKeyBlock.test(v)) out[at || "body"] = "must not contain a private key: send the certificate only"
    } else if (depth < 16 && typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v)) walk(x, at ? `${at}.${k}` : k, depth + 1)
    }
  }
  walk(body, path, 0)
  return out
}

export const SsoConnectionsResource = defineResource({
  name: "SSO connection",
  path: "sso-connections",
  table: "sso_connections",
  indexes: [{ name: "sso_connections_organization", columns: ["organization_id", "created_at"] }],
  output: SsoConnection,
  createInput: SsoConnectionCreate,
  updateInput: SsoConnectionUpdate,
  methods: ["find", "get", "create", "patch"],
  ownerField: "organization_id",
  premiumFeature: "sso",
  privateFields: { version: field.number },
  unique: [["idp_connection_name"]],
  defaults: { idp_domain_aliases: [], idp_sign_saml_request: false },
  ports: [CertificateValidator],
  screenBody: (body) => privateKeyFields(body),
  hooks: {
    create: (_principal, row) =>
      Effect.gen(function*() {
        yield* checkCertificate(row.idp_certificate)
        const org = yield* (yield* Storage).repository(Tables.organizations).get(row.organization_id)
        const suffix = randomToken(9).toLowerCase().replace(/[^a-z0-9]/g, "x")
        return {
          row: {
            ...row,
            idp_connection_id: `con_${randomToken(16)}`,
            idp_connection_name: `org-${suffix}`,
            organization_group_id: Option.match(org, { onNone: () => null, onSome: (o) => o.organization_group_id ?? null })
          }
        }
      }),
    update: (_principal, before, after, input) =>
      Effect.gen(function*() {
        // The spec requires organization_id on patch too; it names the connection's organization, never moves it.
        if (input.organization_id === undefined) {
          return yield* Effect.fail(new InvalidInput({
            message: "Invalid organization_id: is required",
            errors: { organization_id: "is required" }
          }))
        }
        if (input.organization_id !== before.organization_id) {
          return yield* Effect.fail(new InvalidInput({
            message: "Invalid organization_id: must be the connection's organization",
            errors: { organization_id: "must be the connection's organization (not updatable)" }
          }))
        }
        if (input.idp_certificate !== undefined) yield* checkCertificate(input.idp_certificate)
        return after
      })
  }
})
