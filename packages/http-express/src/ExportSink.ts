import { checkReceiverUrl, ExportFailed, ExportSink, type ExportWriter } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import * as path from "node:path"
import type { Writable } from "node:stream"

export interface ExportSinkOptions {
  /** Directory destinations are confined under this directory; without it they fail. */
  readonly exportsRoot?: string | undefined
  /** Hosts allowed despite plain http or a private address (WEBHOOK_ALLOW_HOSTS). */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** Milliseconds an https receiver may take to answer once the body is sent. */
  readonly timeoutMs?: number | undefined
}

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
      abort: Effect.promise(() =>
        new Promise<void>((resolve) => {
          stream.destroy()
          fs.promises.rm(file, { force: true }).then(() => resolve(), () => resolve())
        })
      )
    }
    return writer
  })

const httpWriter = (url: string, options: ExportSinkOptions) =>
  Effect.gen(function*() {
    yield* Effect.mapError(checkReceiverUrl(url, "url", options.allowHosts ?? []), (e) => failed(e.message))
    const u = new URL(url)
    const request = (u.protocol === "https:" ? https : http).request(u, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson", "transfer-encoding": "chunked" }
    })
    let error: Error | undefined
    let status: number | undefined
    const answered = new Promise<void>((resolve) => {
      request.on("response", (res) => {
        status = res.statusCode
        res.resume()
        res.on("end", resolve)
        res.on("error", resolve)
      })
      request.on("error", (e) => {
        error = e
        resolve()
      })
      request.on("close", resolve)
    })
    request.setTimeout(options.timeoutMs ?? 30_000, () => request.destroy(new Error("the receiver timed out")))
    const writer: ExportWriter = {
      write: writeTo(request, () => error),
      close: Effect.flatMap(
        Effect.promise(() => {
          request.end()
          return answered
        }),
        () => {
          if (error) return Effect.fail(failed(`POST ${u.host}: ${error.message}`))
          if (status === undefined || status < 200 || status >= 300) {
            return Effect.fail(failed(`POST ${u.host} answered ${status ?? "nothing"}`))
          }
          return Effect.void
        }
      ),
      abort: Effect.sync(() => request.destroy())
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
