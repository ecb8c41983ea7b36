import * as Effect from "effect/Effect"
import { Secret, SecretCreate, SecretUpdate } from "../Domain/Account.js"
import { SecretHasher } from "../Engine/Ports.js"
import { randomToken } from "../Engine/Random.js"
import { defineResource } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { SecretBox } from "../Engine/Secrets.js"
import { forgetSigningKey, SigningKeys } from "./SigningKeys.js"


export const SecretsResource = defineResource({
  name: "secret",
  path: "secrets",
  table: "secrets",
  indexes: [{ name: "secrets_organization", columns: ["organization_id", "created_at"] }],
  output: Secret,
  createInput: SecretCreate,
  updateInput: SecretUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["secret"],
  // Every answer, not only the one showing the value: the whole service is about credentials.
  revealsCredentials: "every",
  // The value also sealed, not only hashed: it keys the HMAC of signed user ids, which needs it.
  // Secrets made before then hold no sealed value and cannot sign.
  privateFields: { secret_hash: field.string, secret_sealed: field.optionalString },
  quota: "secrets",
  defaults: { require_expiration: false },
  ports: [SigningKeys],
  hooks: {
    // A removed secret stops signing user ids now in this process, not when its kept value ages.
    afterCommit: (output) => forgetSigningKey(output.id),
    create: (_p, row) =>
      Effect.gen(function*() {
        const secret = `ss_${randomToken(32)}`
        const secret_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret))
        const secret_sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(secret))
        return { row: { ...row, secret_hash, secret_sealed }, reveal: { secret } }
      })
  }
})
