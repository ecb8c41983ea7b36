import { SecretHasher } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"
import { Worker } from "node:worker_threads"

export interface ScryptOptions {
  /** CPU/memory cost; lower only in tests. */
  readonly cost?: number
}

/**
 * The hashing thread's code: one hash at a time, synchronously, so that scrypt's memory (16 MB at
 * the default cost) is taken from this one thread's allocator again and again.
 */
const threadCode = `
const { parentPort } = require("node:worker_threads")
const { scryptSync } = require("node:crypto")
parentPort.on("message", ({ id, secret, salt, N, keylen }) => {
  try {
    parentPort.postMessage({ id, key: scryptSync(secret, salt, keylen, { N, r: 8, p: 1, maxmem: 256 * N * 8 + 1024 * 1024 }) })
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) })
  }
})`

type Outcome = { readonly key: Uint8Array; readonly error?: undefined } | { readonly key?: undefined; readonly error: string }

/**
 * scrypt on a thread of its own, started at the first hash. Node's `crypto.scrypt` runs on the
 * libuv pool, whose threads each keep the 16 MB they were given in their own malloc arena once the
 * allocator has raised its mmap threshold (after the first hash): four threads, 64 MB kept for
 * good. One thread keeps one such block, reused by every hash.
 */
class HashingThread {
  private worker: Worker | undefined
  private readonly pending = new Map<number, (outcome: Outcome) => void>()
  private next = 0

  run(secret: string, salt: Buffer, N: number, keylen: number, done: (outcome: Outcome) => void) {
    const worker = this.worker ?? this.start()
    const id = this.next++
    this.pending.set(id, done)
    // Referenced only while a hash is pending: an idle thread never keeps the process alive.
    if (this.pending.size === 1) worker.ref()
    worker.postMessage({ id, secret, salt, N, keylen })
    return () => this.settle(id)
  }

  close() {
    const worker = this.worker
    this.worker = undefined
    this.fail("the hashing thread was closed")
    return worker ? worker.terminate().then(() => undefined) : Promise.resolve()
  }

  private start() {
    const worker = new Worker(threadCode, { eval: true })
    worker.unref()
    worker.on("message", (message: { id: number } & Outcome) => this.settle(message.id)?.(message))
    const lost = (reason: string) => {
      if (this.worker !== worker) return
      this.worker = undefined
      this.fail(reason)
    }
    worker.on("error", (error) => lost(`the hashing thread failed: ${error.message}`))
    worker.on("exit", (code) => lost(`the hashing thread exited with ${code}`))
    this.worker = worker
    return worker
  }

  private settle(id: number) {
    const done = this.pending.get(id)
    this.pending.delete(id)
    if (this.pending.size === 0) this.worker?.unref()
    return done
  }

  private fail(error: string) {
    const waiting = [...this.pending.values()]
    this.pending.clear()
    for (const done of waiting) done({ error })
  }
}

const scrypt = (thread: HashingThread, secret: string, salt: Buffer, N: number, keylen: number) =>
  Effect.async<Buffer>((resume) => {
    const cancel = thread.run(secret, salt, N, keylen, (outcome) =>
      resume(
        outcome.error === undefined
          ? Effect.succeed(Buffer.from(outcome.key.buffer, outcome.key.byteOffset, outcome.key.byteLength))
          : Effect.die(new Error(outcome.error))
      ))
    return Effect.sync(() => void cancel())
  })

/** scrypt hashes as `scrypt$N$salt$hash`, compared in constant time. */
export const ScryptHasherLive = (options: ScryptOptions = {}) =>
  Layer.scoped(
    SecretHasher,
    Effect.map(
      Effect.acquireRelease(Effect.sync(() => new HashingThread()), (thread) => Effect.promise(() => thread.close())),
      (thread) => ({
        hash: (secret: string) =>
          Effect.gen(function*() {
            const N = options.cost ?? 16384
            const salt = crypto.randomBytes(16)
            const key = yield* scrypt(thread, secret, salt, N, 32)
            return `scrypt$${N}$${salt.toString("base64")}$${key.toString("base64")}`
          }),
        verify: (secret: string, stored: string) =>
          Effect.gen(function*() {
            const [scheme, n, salt, hash] = stored.split("$")
            const N = Number(n)
            if (scheme !== "scrypt" || !Number.isInteger(N) || N < 2 || N > 1 << 20 || !salt || !hash) return false
            const expected = Buffer.from(hash, "base64")
            const key = yield* scrypt(thread, secret, Buffer.from(salt, "base64"), N, expected.length)
            return key.length === expected.length && crypto.timingSafeEqual(key, expected)
          })
      })
    )
  )
