import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Option from "effect/Option"
import { answers, defineAction, FileAnswer } from "../Engine/Action.js"
import { nowIso } from "../Engine/Clock.js"
import { Conflict, InvalidInput } from "../Domain/Errors.js"
import { DOC, DOCX, MAX_PROOF_BYTES, Proof, ProofCreate, type ProofMediaType, PROOF_MEDIA_TYPES } from "../Domain/Proofs.js"
import { Digests, MediaTypes, ProofFiles } from "./ProofPorts.js"
import { nextId, Storage, UnitOfWork } from "../Engine/Ports.js"
import { serviceWith } from "../Engine/Services.js"
import type { Principal } from "../Engine/Principal.js"
import { eq, inList } from "../Engine/Query.js"
import { declareResource, portList, type StoredRow } from "../Engine/Resource.js"
import { defineTable, field } from "../Engine/Tables.js"
import { ensureMethodFor } from "../Engine/Bodies.js"
import { loadVisible } from "../Engine/Reads.js"

/**
 * Proofs of consent: files (a screenshot of the banner, a signed form) that show what a person
 * saw and did. The bytes live behind `ProofFiles` (the database by default); the row keeps
 * their size, type and SHA-256, which the consent log covers. The type is read from the bytes,
 * never taken from what the sender declares.
 */

/** A body carrying files: a proof (5 MiB decoded, a third more in base64) or an event with several. */
export const FILE_BODY_LIMIT = 16 * 1024 * 1024

const Proofs = declareResource({
  name: "proof",
  path: "consents/proofs",
  // Consent records, in the consent log: no configuration.
  audited: false,
  table: "consent_proofs",
  indexes: [
    { name: "consent_proofs_organization", columns: ["organization_id", "created_at"] },
    { name: "consent_proofs_user", columns: ["organization_id", "user_id"] }
  ],
  keyedByOrganization: true,
  output: Proof,
  createInput: ProofCreate,
  methods: ["find", "get", "create", "remove"],
  ownerField: "organization_id",
  premiumFeature: "versions_and_proofs",
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  bodyLimit: FILE_BODY_LIMIT,
  // The bytes are not a column: `get` shows them as a data URI.
  transient: ["file"],
  // A proof sent with a consent event is its user's, erased with it.
  privateFields: { user_id: field.optionalString },
  references: [{ field: "user_id", table: "consent_users", onDelete: "cascade" }],
  defaults: { user_id: null }
})

export type ProofRow = StoredRow<typeof Proofs>

/** Where the store keeps the bytes of proofs, unless a host hands in other `ProofFiles`. */
export const ProofFilesTable = defineTable("consent_proof_files", {
  organization_id: field.string,
  id: field.string,
  bytes: { kind: "bytes", nullable: false }
}, { key: ["organization_id", "id"] })

/** Which proofs a consent event names: kept so a named proof is not removed from under it. */
export const EventProofsTable = defineTable("consent_event_proofs", {
  organization_id: field.string,
  /** The event's id and the proof's, as one key (`linkId`). */
  id: field.string,
  event_id: field.string,
  proof_id: field.string,
  created_at: field.timestamp
}, {
  key: ["organization_id", "id"],
  indexes: [
    { name: "consent_event_proofs_proof", columns: ["organization_id", "proof_id"] },
    { name: "consent_event_proofs_event", columns: ["organization_id", "event_id"] }
  ],
  references: [
    { field: "event_id", table: "consent_events", onDelete: "cascade" },
    { field: "proof_id", table: "consent_proofs", onDelete: "cascade" }
  ]
})

const EXTENSIONS: Record<ProofMediaType, string> = {
  "application/pdf": "pdf",
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  [DOCX]: "docx",
  [DOC]: "doc"
}

const badFile = (path: string, why: string) => new InvalidInput({ message: `Invalid ${path}: ${why}`, errors: { [path]: why } })

const dataUriPattern = /^data:([^;,]*)((?:;[^;,]*)*),/i

/** The declared type and the bytes of a base64 data URI. */
export const parseDataUri = (uri: string, path: string): Either.Either<{ mediaType: string; bytes: Uint8Array }, InvalidInput> => {
  const m = dataUriPattern.exec(uri)
  if (m === null) return Either.left(badFile(path, "must be a data URI (data:<type>;base64,…)"))
  const params = m[2]!.split(";").filter((p) => p !== "").map((p) => p.trim().toLowerCase())
  if (!params.includes("base64")) return Either.left(badFile(path, "must be base64 encoded (data:<type>;base64,…)"))
  const data = uri.slice(m[0].length)
  // Four base64 characters make three bytes: a body this long cannot be within the limit.
  if (data.length > Math.ceil(MAX_PROOF_BYTES / 3) * 4 + 4) return Either.left(badFile(path, "must be at most 5 MiB"))
  const bytes = Encoding.decodeBase64(data)
  if (Either.isLeft(bytes)) return Either.left(badFile(path, "is not valid base64"))
  if (bytes.right.byteLength > MAX_PROOF_BYTES) return Either.left(badFile(path, "must be at most 5 MiB"))
  if (bytes.right.byteLength === 0) return Either.left(badFile(path, "is empty"))
  return Either.right({ mediaType: m[1]!.trim().toLowerCase(), bytes: bytes.right })
}

export const dataUriOf = (mediaType: string, bytes: Uint8Array) => `data:${mediaType};base64,${Encoding.encodeBase64(bytes)}`

const proofs = () => serviceWith(Storage, (s) => s.repository(Proofs.tableDef))

/**
 * Checks a file and keeps its bytes: they must be one of the proof types and the type its URI
 * declares. Answers the proof's row, to be inserted in the same transaction.
 */
const prepareProof = (organizationId: string, file: string, userId: string | null, path: string) =>
  Effect.gen(function*() {
    const { bytes, mediaType } = yield* parseDataUri(file, path)
    if (!(PROOF_MEDIA_TYPES as ReadonlyArray<string>).includes(mediaType)) {
      return yield* Effect.fail(badFile(path, `must be one of ${PROOF_MEDIA_TYPES.join(", ")}, not ${mediaType || "no type"}`))
    }
    const detected = yield* Effect.flatMap(MediaTypes, (types) => types.detect(bytes))
    if (detected !== mediaType) {
      return yield* Effect.fail(badFile(path, detected === undefined
        ? `is not a ${mediaType} file (its content is none of the accepted types)`
        : `is declared ${mediaType} but its content is ${detected}`))
    }
    const digests = yield* Digests
    const row = {
      id: yield* nextId,
      organization_id: organizationId,
      size: bytes.byteLength,
      media_type: detected,
      sha256: digests.sha256(bytes),
      user_id: userId,
      created_at: yield* nowIso
    } satisfies ProofRow
    yield* Effect.flatMap(ProofFiles, (files) => files.put({ organization_id: organizationId, id: row.id }, bytes))
    return row
  })

/** Keeps a proof sent with a consent event, inside the event's transaction: they are kept together or not at all. */
export const storeProof = (organizationId: string, file: string, userId: string | null, path: string) =>
  Effect.flatMap(prepareProof(organizationId, file, userId, path), (row) =>
    Effect.orDie(Effect.flatMap(proofs(), (repo) => repo.create(row))))

/**
 * Held by a write that names a proof and by the removal of that proof until they commit: of an
 * event naming a proof and the proof's removal at once, one sees the other (a 409 or a 400),
 * never both succeed.
 */
const lockProofs = (organizationId: string, ids: ReadonlyArray<string>) =>
  Effect.flatMap(UnitOfWork, (uow) =>
    Effect.forEach([...new Set(ids)].sort(), (id) => uow.lock(`proof:${organizationId}:${id}`), { discard: true }))

/** The proofs `ids` names, all of the organization's, else a 400 naming `path`. */
/** The proofs of an organization these ids name (those that still exist), in one read. */
export const proofsNamed = (organizationId: string, ids: ReadonlyArray<string>) =>
  ids.length === 0
    ? Effect.succeed<ReadonlyArray<StoredRow<typeof Proofs>>>([])
    : Effect.flatMap(Storage, (storage) =>
      Effect.map(storage.repository(Proofs.tableDef).find({
        count: false,
        where: [eq("organization_id", organizationId), inList("id", [...ids])],
        sort: [],
        ordered: false,
        limit: ids.length,
        skip: 0
      }), (page) => page.data))

export const requireProofs = (organizationId: string, ids: ReadonlyArray<string>, path: string) =>
  Effect.gen(function*() {
    if (ids.length === 0) return
    yield* lockProofs(organizationId, ids)
    const unique = [...new Set(ids)]
    const page = yield* Effect.flatMap(proofs(), (repo) =>
      repo.find({
        count: false,
        where: [eq("organization_id", organizationId), inList("id", unique)],
        sort: [],
        ordered: false,
        limit: unique.length,
        skip: 0
      }))
    const found = new Set(page.data.map((p) => p.id))
    const missing = unique.filter((id) => !found.has(id))
    if (missing.length > 0) return yield* Effect.fail(badFile(path, `names no proof of this organization: ${missing.join(", ")}`))
  })

/** One link's key: ids may hold any character, so the first is prefixed with its length. */
const linkId = (eventId: string, proofId: string) => `${eventId.length}:${eventId}${proofId}`

/** Records which proofs an event names, replacing what it named before. */
export const linkProofs = (organizationId: string, eventId: string, before: ReadonlyArray<string>, after: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const links = (yield* Storage).repository(EventProofsTable)
    const now = yield* nowIso
    for (const id of new Set(before)) {
      if (!after.includes(id)) yield* Effect.orDie(links.remove({ organization_id: organizationId, id: linkId(eventId, id) }))
    }
    const added = [...new Set(after)].filter((id) => !before.includes(id))
    if (added.length > 0) {
      yield* Effect.orDie(links.insert(added.map((proof_id) => ({
        organization_id: organizationId,
        id: linkId(eventId, proof_id),
        event_id: eventId,
        proof_id,
        created_at: now
      }))))
    }
  })

/** Removes the bytes of a user's proofs: its erasure removes their rows. */
export const forgetProofFilesOf = (organizationId: string, userId: string) =>
  Effect.gen(function*() {
    const page = yield* Effect.flatMap(proofs(), (repo) =>
      repo.find({
        count: false,
        where: [eq("organization_id", organizationId), eq("user_id", userId)],
        sort: [],
        ordered: false,
        limit: 100_000,
        skip: 0
      }))
    const files = yield* ProofFiles
    for (const p of page.data) yield* files.remove({ organization_id: organizationId, id: p.id })
  })

export const ProofsResource = Proofs.with<MediaTypes | ProofFiles | Digests>({
  ports: portList(MediaTypes, ProofFiles, Digests),
  hooks: {
    create: (_p, row, input) => Effect.map(prepareProof(row.organization_id, input.file, null, "file"), (prepared) => ({ row: prepared })),
    // The bytes are shown by `get` only, as the reference API answers.
    expand: (_p, row, output) =>
      Effect.map(
        Effect.flatMap(ProofFiles, (files) => files.get({ organization_id: row.organization_id, id: row.id })),
        (bytes) => (Option.isSome(bytes) ? { ...output, file: dataUriOf(row.media_type, bytes.value) } : output)
      ),
    remove: (_p, row) =>
      Effect.gen(function*() {
        yield* lockProofs(row.organization_id, [row.id])
        const named = yield* (yield* Storage).repository(EventProofsTable).count([
          eq("organization_id", row.organization_id),
          eq("proof_id", row.id)
        ])
        if (named > 0) {
          return yield* Effect.fail(new Conflict({
            message: `The proof is named by ${named} consent event${named === 1 ? "" : "s"}: remove it from them first`,
            errors: { id: "is named by consent events" }
          }))
        }
      }),
    afterRemove: (_p, removed) =>
      Effect.flatMap(ProofFiles, (files) => files.remove({ organization_id: removed.organization_id, id: removed.id }))
  }
})

/** `GET /v1/consents/proofs/:id/file`: the bytes themselves, as a download. */
export const ProofFileAction = defineAction({
  place: "consents/proofs",
  name: "file",
  method: "GET",
  path: "consents/proofs/:id/file",
  summary: "The bytes of a proof, as a download (Content-Disposition: attachment, a sandbox CSP)",
  auth: "bearer",
  query: "lookUp",
  answers: answers.file(PROOF_MEDIA_TYPES),
  status: 200,
  premiumFeature: "versions_and_proofs",
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  target: (request) => ({ def: ProofsResource, id: request.id }),
  run: (principal: Principal, request) =>
    Effect.gen(function*() {
      yield* ensureMethodFor(ProofsResource, principal, "get")
      const row = yield* loadVisible(ProofsResource, principal, request.id, request.at)
      const bytes = yield* Effect.flatMap(ProofFiles, (files) => files.get({ organization_id: row.organization_id, id: row.id }))
      if (Option.isNone(bytes)) return yield* Effect.dieMessage(`the bytes of proof ${row.id} are missing`)
      return new FileAnswer(bytes.value, row.media_type, `${row.id}.${EXTENSIONS[row.media_type as ProofMediaType] ?? "bin"}`)
    })
})
