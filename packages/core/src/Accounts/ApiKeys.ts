import { CredentialCache, forgetCredential } from "./CredentialCache.js"
import * as Effect from "effect/Effect"
import { ApiKey, ApiKeyCreate, ApiKeyUpdate } from "../Domain/Account.js"
import { Forbidden } from "../Domain/Errors.js"
import { SecretHasher } from "../Engine/Ports.js"
import { isOperator, type Principal } from "../Engine/Principal.js"
import { type Condition, eq, type FindQuery } from "../Engine/Query.js"
import { randomToken } from "../Engine/Random.js"
import { defineResource, portList } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { ConsentTokenStates, forgetTokenIssuer } from "./TokenStates.js"


const mentions = (where: ReadonlyArray<Condition>, f: string): ReadonlyArray<Condition> =>
  where.flatMap((c) => (c._tag === "Or" ? c.branches.flatMap((b) => mentions(b, f)) : c._tag !== "Exists" && c.field === f ? [c] : []))

/** Internal keys stay out of lists unless asked for, and only the operator may ask. */
const scopeInternalKeys = (principal: Principal, query: FindQuery): Effect.Effect<FindQuery, Forbidden> => {
  const asked = mentions(query.where, "is_internal")
  if (asked.length === 0) return Effect.succeed({ ...query, where: [...query.where, eq("is_internal", false)] })
  if (isOperator(principal)) return Effect.succeed(query)
  const onlyPublic = asked.every((c) => c._tag === "Compare" && c.op === "eq" && c.value === false)
  // Still forced at the top level: a mention inside one `$or` branch does not constrain the others.
  return onlyPublic
    ? Effect.succeed({ ...query, where: [...query.where, eq("is_internal", false)] })
    : Effect.fail(new Forbidden({ message: "Only the operator may list internal keys" }))
}

export const ApiKeysResource = defineResource({
  name: "API key",
  path: "keys",
  table: "api_keys",
  indexes: [{ name: "api_keys_organization", columns: ["organization_id", "created_at"] }],
  output: ApiKey,
  createInput: ApiKeyCreate,
  updateInput: ApiKeyUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["secret"],
  revealsCredentials: "create",
  // The secret a rotation replaced, hashed like the current one, and kept until its date.
  privateFields: { secret_hash: field.string, previous_secret_hash: field.optionalString },
  unique: [["organization_id", "name"]],
  defaults: { enabled: true, is_internal: false },
  ports: portList<CredentialCache | ConsentTokenStates>(CredentialCache, ConsentTokenStates),
  hooks: {
    // A deleted key's sessions end now in this process, not when its cached entry ages; so do
    // the consent tokens it minted, disabled or deleted.
    afterCommit: (output) => Effect.zipRight(forgetCredential("api_keys", output.id), forgetTokenIssuer(output.id)),
    find: scopeInternalKeys,
    visible: (principal, row) => row.is_internal !== true || isOperator(principal),
    create: (principal, row) =>
      Effect.gen(function*() {
        if (row.is_internal === true && !isOperator(principal)) {
          return yield* Effect.fail(new Forbidden({ message: "Only the operator may create internal keys" }))
        }
        const secret = `sk_${randomToken(32)}`
        const secret_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret))
        return { row: { ...row, secret_hash }, reveal: { secret } }
      })
  }
})
