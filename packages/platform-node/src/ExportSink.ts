import { ExportFailed, ExportSink, type ExportWriter, isAllowedHost } from "@cmp/core"
import { openStream } from "@cmp/webhooks"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Writable } from "node:stream"

export interface ExportSinkOptions {
  /** Directory destinations are confined under this directory; without it they fail. */
  readonly exportsRoot?: string | undefined
  /** Hosts allowed despite plain http or a private address (WEBHOOK_ALLOW_HOSTS). */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** Local address the receiver connections are bound to (WEBHOOK_LOCAL_ADDRESS), as for webhooks. */
  readonly localAddress?: string | undefined
  /**
   * Milliseconds a receiver may keep the export waiting, per wait: to resolve its name, to take
   * a chunk (back-pressure), and to answer once the body is sent. Default 30 s.
   */
  readonly timeoutMs?: number | undefined
}

const DEFAULT_TIMEOUT_MS = 30_000

const failed = (message: string) => new ExportFailed({ message })

/** Writes with back-pressure: waits for `drain` when the stream's buffer is full. */
const writeTo = (stream: Writable, errorOf: () => Error | undefined) => (chunk: string) =>
  Effect.async<void, ExportFailed>((resume) => {
    const e = errorOf()
    if (e) return resume(Effect.fail(failed(e.message)))
    if (stream.write(chunk)) return resume(Effect.void)
    const onDrain = () => {
      stream.off("error", onError)
      resume(Effect.void)
    }
    const onError = (err: Error) => {
      stream.off("drain", onDrain)
      resume(Effect.fail(failed(err.message)))
    }
    stream.once("drain", onDrain)
    stream.once("error", onError)
    // An interrupted run stops waiting here and aborts the writer: nothing is left listening.
    return Effect.sync(() => {
      stream.off("drain", onDrain)
      stream.off("error", onError)
    })
  })

const directoryWriter = (root: string | undefined, dir: string, fileName: string) =>
  Effect.gen(function*() {
    if (!root) return yield* Effect.fail(failed("directory destinations need EXPORTS_ROOT on the server"))
    const base = path.resolve(root)
    const target = path.resolve(base, dir)
    if (target !== base && !target.startsWith(base + path.sep)) {
      return yield* Effect.fail(failed("the directory is outside the exports root"))
    }
    yield* Effect.tryPromise({ try: () => fs.promises.mkdir(target, { recursive: true }), catch: (e) => failed(String(e)) })
    const realBase = yield* Effect.tryPromise({ try: () => fs.promises.realpath(base), catch: (e) => failed(String(e)) })
    const realTarget = yield* Effect.tryPromise({ try: () => fs.promises.realpath(target), catch: (e) => failed(String(e)) })
    if (realTarget !== realBase && !realTarget.startsWith(realBase + path.sep)) {
      return yield* Effect.fail(failed("the directory is outside the exports root"))
    }
    const file = path.join(realTarget, fileName)
    const stream = fs.createWriteStream(file, { flags: "wx" })
    let error: Error | undefined
    stream.on("error", (e) => (error = e))
    const writer: ExportWriter = {
      write: writeTo(stream, () => error),
      close: Effect.async<void, ExportFailed>((resume) => {
        if (error) return resume(Effect.fail(failed(error.message)))
        stream.end(() => resume(error ? Effect.fail(failed(error.message)) : Effect.void))
      }),
      // The file is created when the stream's open completes, which may be after `destroy`:
      // remove it once the stream has closed, or a partial file could appear after the removal.
      abort: Effect.promise(() =>
        new Promise<void>((resolve) => {
          const remove = () => void fs.promises.rm(file, { force: true }).then(() => resolve(), () => resolve())
          if (stream.closed) return remove()
          stream.once("close", remove)
          stream.destroy()
        })
      )
    }
    return writer
  })

/**
 * A streamed POST through the webhooks sender, so an export destination gets the checks a
 * webhook gets, at the moment of the call: the name is resolved, every address is vetted
 * against the address policy (unless the host is allow-listed), the connection is pinned to the
 * vetted addresses and bound to the configured source address, and redirects are not followed.
 * The config-time check (`checkReceiverUrl`, by name only) stays in core.
 */
const httpWriter = (url: string, options: ExportSinkOptions) =>
  Effect.gen(function*() {
    const parsed = URL.canParse(url) ? new URL(url) : undefined
    // The hostname, never the port: a refused destination must read the same whether something
    // listens there or not, or the messages would make a port scanner.
    const label = `POST ${parsed?.hostname ?? "the destination"}`
    const allowHosts = options.allowHosts ?? []
    // Plain http only for allow-listed hosts, as at config time: the allow-list may have
    // changed since the destination was saved, and the body is consent data.
    if (parsed?.protocol === "http:" && !isAllowedHost(parsed.hostname, allowHosts)) {
      return yield* Effect.fail(failed(`${label}: refused: plain http is only for hosts in WEBHOOK_ALLOW_HOSTS`))
    }
    const call = yield* Effect.mapError(
      openStream({
        url,
        method: "POST",
        headers: { "content-type": "application/x-ndjson" },
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        allowHosts,
        localAddress: options.localAddress
      }),
      (e) => failed(`${label}: ${e.message}`)
    )
    const writer: ExportWriter = {
      write: (chunk) => Effect.mapError(call.write(chunk), (e) => failed(`${label}: ${e.message}`)),
      close: Effect.flatMap(call.end, (result) => {
        if (result.error !== null) return Effect.fail(failed(`${label}: ${result.error}`))
        // A 3xx included: it is not followed, so the export did not arrive.
        if (result.status === null || result.status < 200 || result.status >= 300) {
          return Effect.fail(failed(`${label} answered ${result.status ?? "nothing"}`))
        }
        return Effect.void
      }),
      abort: call.abort
    }
    return writer
  })

/** Directories under the exports root (node:fs streams) and receivers that take a streamed POST. */
export const NodeExportSinkLive = (options: ExportSinkOptions = {}) =>
  Layer.succeed(ExportSink, {
    open: (destination, fileName) =>
      destination.type === "directory"
        ? directoryWriter(options.exportsRoot, destination.path, fileName)
        : httpWriter(destination.url, options)
  })
