import { CertificateValidator, DnsRecords, Ids, Provisioner, SecretBox, SecretHasher, Storage, TcStringEncoder, TokenIssuer, UrlSigner } from "@cmp/core"
import { SqliteStore } from "@cmp/store-sqlite"
import { TCString } from "@iabtechlabtcf/core"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { SignJWT } from "jose"
import {
  AesSecretBoxLive,
  DnsProvisionerLive,
  DnsRecordsLive,
  HmacUrlSignerLive,
  JoseTokensLive,
  macWith,
  NodeAdapters,
  ScryptHasherLive,
  TcStringEncoderLive,
  verifySignedUrl,
  X509CertificateValidatorLive
} from "../src/index.js"

/** The Node adapters through the ports of core they implement. */

const fixtures = path.join(import.meta.dirname, "fixtures")
const store = () => Layer.merge(SqliteStore.layer({ filename: ":memory:" }), Ids.Live)
const now = () => Math.floor(Date.now() / 1000)
const claims = (iat: number) => ({ sub: "key-1", kind: "client" as const, org: "org-1", iat, exp: iat + 3600 })

const defectOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined

describe("hashing", () => {
  it.live("scrypt: a secret verifies against its hash, another does not, a malformed hash never", () =>
    Effect.gen(function*() {
      const hasher = yield* SecretHasher
      const stored = yield* hasher.hash("s3cret")
      assert.match(stored, /^scrypt\$1024\$/)
      assert.notInclude(stored, "s3cret")
      assert.isTrue(yield* hasher.verify("s3cret", stored))
      assert.isFalse(yield* hasher.verify("s3cret!", stored))
      assert.notStrictEqual(yield* hasher.hash("s3cret"), stored)
      for (const bad of ["", "scrypt$x$y$z", "bcrypt$1024$a$b", "scrypt$99999999$a$b"]) assert.isFalse(yield* hasher.verify("s3cret", bad))
    }).pipe(Effect.provide(ScryptHasherLive({ cost: 1024 }))))
})

describe("access tokens", () => {
  it.live("issue and verify; expired, not yet valid, forged, alg none and another key's tokens fail", () =>
    Effect.gen(function*() {
      const tokens = yield* TokenIssuer
      const t = now()
      const token = yield* tokens.issue(claims(t))
      assert.deepInclude(yield* tokens.verify(token, t), { sub: "key-1", kind: "client", org: "org-1" })
      assert.strictEqual((yield* Effect.flip(tokens.verify(token, t + 3601)))._tag, "NotAuthenticated")
      assert.strictEqual((yield* Effect.flip(tokens.verify(token, t - 10)))._tag, "NotAuthenticated")
      const [h, p] = token.split(".")
      const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${p}.`
      assert.strictEqual((yield* Effect.flip(tokens.verify(none, t)))._tag, "NotAuthenticated")
      assert.strictEqual((yield* Effect.flip(tokens.verify(`${h}.${p}.AAAA`, t)))._tag, "NotAuthenticated")
      const other = yield* Effect.promise(() =>
        new SignJWT({ kind: "operator" }).setProtectedHeader({ alg: "HS256" }).setSubject("x").setIssuedAt(t).setExpirationTime(t + 60)
          .sign(new TextEncoder().encode("another-key-another-key-another-key!"))
      )
      assert.strictEqual((yield* Effect.flip(tokens.verify(other, t)))._tag, "NotAuthenticated")
    }).pipe(Effect.provide(JoseTokensLive("a-configured-signing-key-of-32-chars!").pipe(Layer.provide(store())))))

  it.live("without a configured key, one is generated once and kept: a second issuer on the same store accepts the first's tokens", () =>
    Effect.gen(function*() {
      const storeContext = yield* Layer.build(store())
      const first = yield* Effect.provide(TokenIssuer, JoseTokensLive().pipe(Layer.provide(Layer.succeedContext(storeContext))))
      const second = yield* Effect.provide(TokenIssuer, JoseTokensLive().pipe(Layer.provide(Layer.succeedContext(storeContext))))
      const token = yield* first.issue(claims(now()))
      assert.strictEqual((yield* second.verify(token, now())).sub, "key-1")
      const settings = yield* Effect.provide(Effect.flatMap(Storage, (s) => s.repository({ table: "settings", fields: {}, key: ["id"], unique: [], indexes: [], references: [], defaultSort: [] }).get("jwt_signing_keys")), storeContext)
      assert.isTrue(Option.isSome(settings))
    }).pipe(Effect.scoped))

  it.effect("a configured key shorter than 32 characters is refused at start", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(JoseTokensLive("short").pipe(Layer.provide(store()))).pipe(Effect.scoped))
      assert.match(String(defectOf(exit)), /JWT_SECRET must be at least 32 characters/)
    }))
})

describe("secret box", () => {
  it.effect("seal and open; a tampered or foreign box does not open; a bad key is refused", () =>
    Effect.gen(function*() {
      const box = yield* SecretBox
      const sealed = yield* box.seal("whsec_abc")
      assert.notInclude(sealed, "whsec_abc")
      assert.strictEqual(yield* box.open(sealed), "whsec_abc")
      assert.notStrictEqual(yield* box.seal("whsec_abc"), sealed)
      const parts = sealed.split(".")
      const tampered = [...parts.slice(0, 3), Buffer.from("x").toString("base64url")].join(".")
      assert.isDefined(defectOf(yield* Effect.exit(box.open(tampered))))
      const foreign = yield* Effect.provide(SecretBox, AesSecretBoxLive("b".repeat(64)).pipe(Layer.provide(store())))
      assert.isDefined(defectOf(yield* Effect.exit(foreign.open(sealed))))
      const bad = yield* Effect.exit(Layer.build(AesSecretBoxLive("too-short").pipe(Layer.provide(store()))).pipe(Effect.scoped))
      assert.match(String(defectOf(bad)), /ENCRYPTION_KEY must be 32 bytes/)
    }).pipe(Effect.provide(AesSecretBoxLive("a".repeat(64)).pipe(Layer.provide(store())))))
})

describe("signed URLs", () => {
  const key = "k".repeat(32)
  it.effect("a signed URL verifies until it expires; a changed URL or signature does not", () =>
    Effect.gen(function*() {
      const signer = yield* UrlSigner
      const signed = yield* signer.sign("https://dash.example.com/d/1?view=a", 2_000_000_000)
      const url = new URL(signed)
      assert.strictEqual(url.searchParams.get("view"), "a")
      assert.strictEqual(url.searchParams.get("expires"), "2000000000")
      assert.isTrue(verifySignedUrl(key, signed, 1_999_999_999))
      assert.isFalse(verifySignedUrl(key, signed, 2_000_000_000))
      assert.isFalse(verifySignedUrl(key, signed.replace("view=a", "view=b"), 1_999_999_999))
      assert.isFalse(verifySignedUrl("o".repeat(32), signed, 1_999_999_999))
    }).pipe(Effect.provide(HmacUrlSignerLive(key).pipe(Layer.provide(store())))))

  it.effect("a check value is the keyed MAC of its purpose's key: the same for the same key, another for another key or purpose", () =>
    Effect.gen(function*() {
      const mac = (k: string, purpose: string, data: string) =>
        Effect.flatMap(UrlSigner, (s) => s.mac(purpose, data)).pipe(Effect.provide(HmacUrlSignerLive(k).pipe(Layer.provide(store()))))
      const value = yield* mac(key, "cursor", "position")
      assert.strictEqual(yield* mac(key, "cursor", "position"), value)
      assert.strictEqual(value, macWith(key, "cursor", "position"))
      assert.notStrictEqual(yield* mac("o".repeat(32), "cursor", "position"), value)
      assert.notStrictEqual(yield* mac(key, "other", "position"), value)
      assert.notStrictEqual(yield* mac(key, "cursor", "position2"), value)
      // Not a digest anyone could compute.
      assert.notStrictEqual(value, crypto.createHash("sha256").update("position").digest("base64url"))
    }))
})

describe("certificates", () => {
  const pem = fs.readFileSync(path.join(fixtures, "localhost-cert.pem"), "utf8")
  it.effect("a PEM certificate passes until it expires; anything else is refused with a reason", () =>
    Effect.gen(function*() {
      const validator = yield* CertificateValidator
      assert.isTrue(Option.isNone(yield* validator.check(pem, Date.parse("2030-01-01T00:00:00Z"))))
      assert.match(Option.getOrThrow(yield* validator.check(pem, Date.parse("2999-01-01T00:00:00Z"))), /expired/)
      const at = Date.parse("2030-01-01T00:00:00Z")
      assert.match(Option.getOrThrow(yield* validator.check("not a certificate", at)), /exactly one PEM certificate/)
      // X509Certificate reads the first block only: what follows it would be stored unchecked.
      assert.match(Option.getOrThrow(yield* validator.check(`${pem}\n${pem}`, at)), /exactly one PEM certificate/)
      assert.match(Option.getOrThrow(yield* validator.check(`${pem}\ntrailing text`, at)), /exactly one PEM certificate/)
      const key = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"
      assert.match(Option.getOrThrow(yield* validator.check(`${pem}\n${key}`, at)), /must not contain a private key/)
      const broken = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----"
      assert.match(Option.getOrThrow(yield* validator.check(broken, at)), /valid PEM X\.509/)
    }).pipe(Effect.provide(X509CertificateValidatorLive)))
})

describe("DNS provisioner", () => {
  const domain = (id: string, type = "custom") => ({ id, type })
  it.effect("a custom domain is ready when it is a CNAME of the target, else failed; a managed one at once", () =>
    Effect.gen(function*() {
      const provisioner = yield* Provisioner
      assert.strictEqual(yield* provisioner.deploy(domain("good.example.com")), "ready")
      assert.strictEqual(yield* provisioner.deploy(domain("other.example.com")), "failed")
      assert.strictEqual(yield* provisioner.deploy(domain("missing.example.com")), "failed")
      assert.strictEqual(yield* provisioner.deploy(domain("x.cmp.example", "managed")), "ready")
      assert.strictEqual(yield* provisioner.undeploy(domain("good.example.com")), "removed")
    }).pipe(Effect.provide(DnsProvisionerLive({
      target: "Edge.CMP.example.",
      resolveCname: async (host) => {
        if (host === "good.example.com") return ["edge.cmp.example"]
        if (host === "other.example.com") return ["elsewhere.example"]
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" })
      }
    }))))
})

describe("DNS records", () => {
  const failing = (code: string) => Object.assign(new Error(code), { code })
  it.live("a name's TXT records, each one string of its chunks; none for a name without any; a look-up without an answer fails with its code", () =>
    Effect.gen(function*() {
      const dns = yield* DnsRecords
      assert.deepStrictEqual(yield* dns.txt("_cmp-verify.shop.example.com"), ["v=spf1 -all", "abcdef"])
      assert.deepStrictEqual(yield* dns.txt("_cmp-verify.missing.example.com"), [])
      assert.deepStrictEqual(yield* dns.txt("_cmp-verify.empty.example.com"), [])
      const lost = yield* Effect.flip(dns.txt("_cmp-verify.broken.example.com"))
      assert.strictEqual(lost._tag, "DnsLookupFailed")
      assert.strictEqual(lost.code, "ESERVFAIL")
      const slow = yield* Effect.flip(dns.txt("_cmp-verify.slow.example.com"))
      assert.strictEqual(slow.code, "ETIMEOUT")
    }).pipe(Effect.provide(DnsRecordsLive({
      timeoutMs: 50,
      resolveTxt: async (name) => {
        if (name === "_cmp-verify.shop.example.com") return [["v=spf1 -all"], ["abc", "def"]]
        if (name === "_cmp-verify.missing.example.com") throw failing("ENOTFOUND")
        if (name === "_cmp-verify.empty.example.com") throw failing("ENODATA")
        if (name === "_cmp-verify.slow.example.com") return new Promise(() => {})
        throw failing("ESERVFAIL")
      }
    }))))
})

describe("TC strings", () => {
  const vendorList = JSON.parse(fs.readFileSync(path.join(fixtures, "vendor-list.json"), "utf8"))
  const choices = {
    purposeConsents: [1, 3],
    purposeLegitimateInterests: [2],
    vendorConsents: [1],
    vendorLegitimateInterests: [],
    created: "2026-11-22T10:00:00.000Z"
  }
  it.effect("encodes the choices against the vendor list; the string decodes to them", () =>
    Effect.gen(function*() {
      const encoded = yield* (yield* TcStringEncoder).encode(choices)
      const model = TCString.decode(encoded)
      const on = (vector: { forEach: (f: (value: boolean, id: number) => void) => void }) => {
        const ids: Array<number> = []
        vector.forEach((value, id) => value && ids.push(id))
        return ids
      }
      assert.deepStrictEqual(on(model.purposeConsents), [1, 3])
      assert.deepStrictEqual(on(model.purposeLegitimateInterests), [2])
      assert.deepStrictEqual(on(model.vendorConsents), [1])
    }).pipe(Effect.provide(TcStringEncoderLive({ vendorList }))))

  it.effect("without a vendor list the answer is a 400-kind InvalidInput, not an invented list", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip((yield* TcStringEncoder).encode(choices))
      assert.strictEqual(error._tag, "InvalidInput")
    }).pipe(Effect.provide(TcStringEncoderLive())))
})

describe("NodeAdapters.layer", () => {
  it.effect("provides every port core leaves to the host", () =>
    Effect.gen(function*() {
      yield* SecretHasher
      yield* TokenIssuer
      yield* SecretBox
      yield* UrlSigner
      yield* CertificateValidator
      yield* TcStringEncoder
      assert.strictEqual(yield* (yield* Provisioner).deploy({ id: "a.example.com", type: "custom" }), "ready")
    }).pipe(Effect.provide(NodeAdapters.layer({ hashCost: 1024 }).pipe(Layer.provide(store())))))
})
