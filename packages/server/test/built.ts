import { type ChildProcess, spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"

/**
 * The bundle `pnpm start`, `pnpm worker` and the README run (`dist/main.mjs`, built once per test
 * run by `build-dist.ts`), as child processes.
 */

export const packageDir = path.join(import.meta.dirname, "..")
export const repositoryRoot = path.join(packageDir, "..", "..")
const main = path.join(packageDir, "dist", "main.mjs")

/**
 * This process's environment without its database settings (the SQLite default, even where CI
 * sets DATABASE_URL), plus `extra`.
 */
export const childEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const { DATABASE_URL: _url, DATABASE_POOL_SIZE: _pool, SQLITE_PATH: _file, ...inherited } = process.env
  return { ...inherited, ...extra }
}

export interface Built {
  readonly child: ChildProcess
  /** stdout and stderr so far. */
  readonly output: () => string
  /** The exit code, or the signal's name when a signal ended it. */
  readonly exited: Promise<number | string>
  readonly alive: () => boolean
}

const children = new Set<ChildProcess>()

/** SIGKILLs whatever a test left running (afterAll). */
export const killLeftovers = () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
}

/** Starts `main.mjs <args>`; resolves once its output matches `ready`. */
export const startBuilt = (args: Array<string>, env: NodeJS.ProcessEnv, ready: RegExp) =>
  new Promise<Built & { readonly match: RegExpExecArray }>((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { env, cwd: repositoryRoot, stdio: ["ignore", "pipe", "pipe"] })
    children.add(child)
    let out = ""
    let started = false
    const exited = new Promise<number | string>((done) =>
      child.once("exit", (code, signal) => {
        children.delete(child)
        done(code ?? signal ?? "unknown")
        if (!started) reject(new Error(`main.mjs ${args.join(" ")} exited (${code ?? signal}) before it was ready: ${out}`))
      })
    )
    const handle: Built = {
      child,
      output: () => out,
      exited,
      alive: () => child.exitCode === null && child.signalCode === null
    }
    const check = () => {
      const match = started ? null : ready.exec(out)
      if (match === null) return
      started = true
      resolve({ ...handle, match })
    }
    child.stdout!.on("data", (d) => {
      out += String(d)
      check()
    })
    child.stderr!.on("data", (d) => (out += String(d)))
  })

/** `main.mjs` (serve) on a free port; resolves with its URL once it listens. */
export const startServer = async (env: NodeJS.ProcessEnv) => {
  const s = await startBuilt([], { ...env, PORT: "0" }, /"message":"listening","url":"([^"]+)"/)
  return { ...s, url: s.match[1]! }
}

/** `main.mjs worker`; resolves once it delivers. */
export const startWorker = (env: NodeJS.ProcessEnv) => startBuilt(["worker"], env, /"message":"delivering webhooks"/)

/** A port nothing listens on now (bound once, then released). */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = http.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      server.close(() => resolve(port))
    })
  })
