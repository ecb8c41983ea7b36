import { ProofFiles, type ProofKey } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Unavailable from "./Unavailable.js"

/**
 * The bytes of proofs in the database (a BLOB on SQLite, a `bytea` on PostgreSQL), written in
 * the caller's transaction: an event and the proofs it came with are kept together or not at all.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()

  // Both drivers bind a Buffer as binary; a plain Uint8Array is viewed as one without a copy.
  const binary = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

  const put = (key: ProofKey, bytes: Uint8Array) =>
    sql`INSERT INTO consent_proof_files (organization_id, id, bytes) VALUES (${key.organization_id}, ${key.id}, ${binary(bytes)})`.pipe(
      Effect.asVoid,
      Unavailable.orDie
    )

  const get = (key: ProofKey) =>
    sql<{ bytes: Uint8Array }>`SELECT bytes FROM consent_proof_files WHERE organization_id = ${key.organization_id} AND id = ${key.id}`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => new Uint8Array(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength))),
      Unavailable.orDie
    )

  const remove = (key: ProofKey) =>
    sql`DELETE FROM consent_proof_files WHERE organization_id = ${key.organization_id} AND id = ${key.id}`.pipe(Effect.asVoid, Unavailable.orDie)

  const forget = (organizationId: string) =>
    sql`DELETE FROM consent_proof_files WHERE organization_id = ${organizationId}`.pipe(Effect.asVoid, Unavailable.orDie)

  return ProofFiles.of({ put, get, remove, forget })
})

export const layer: Layer.Layer<ProofFiles, never, SqlClient.SqlClient> = Layer.effect(ProofFiles, make)
