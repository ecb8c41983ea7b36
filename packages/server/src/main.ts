#!/usr/bin/env -S npx tsx
import { createOperatorKey } from "@cmp/core"
import { makeRuntime, startServer } from "@cmp/http-express"
import { Dispatcher } from "@cmp/webhooks"
import * as os from "node:os"
import { ConfigError, fromEnv } from "./Config.js"

/**
 * `pnpm start`: serve the API (and deliver webhooks, unless WEBHOOK_DISPATCHER=false).
 * `pnpm worker`: only deliver webhooks (more of them, on other machines, scale delivery).
 * `pnpm bootstrap`: print a new operator key and secret as JSON.
 */
const main = async () => {
  const command = process.argv[2] ?? "serve"
  const options = fromEnv()
  if (command === "bootstrap") {
    const runtime = makeRuntime({ ...options, logLevel: "Warning" })
    const created = await runtime.runPromise(createOperatorKey)
    process.stdout.write(`${JSON.stringify(created)}\n`)
    await runtime.dispose()
    return
  }
  if (command === "worker") {
    const workerId = `${os.hostname()}-${process.pid}`
    const runtime = makeRuntime({ ...options, background: Dispatcher.layer({ ...options.dispatcher, workerId }) })
    // Building the runtime starts the delivery loop.
    await runtime.runtime()
    console.log(JSON.stringify({ message: "delivering webhooks", workerId, database: options.database }))
    const stop = () => {
      runtime.dispose().then(() => process.exit(0), () => process.exit(1))
    }
    process.once("SIGINT", stop)
    process.once("SIGTERM", stop)
    return
  }
  if (command !== "serve") throw new ConfigError(`Unknown command '${command}'; use 'serve', 'worker' or 'bootstrap'`)
  const running = await startServer({
    ...options,
    background: options.inServerDispatcher ? Dispatcher.layer(options.dispatcher) : undefined
  })
  const mode = options.tls ? "https" : options.allowHttp ? "plain http (ALLOW_HTTP, development only)" : "http answering 301 to https"
  const database = options.database === "postgres" ? { database: "postgres" } : { database: "sqlite", sqlite: options.sqlitePath }
  console.log(JSON.stringify({ message: "listening", url: running.url, mode, ...database, pid: process.pid }))
  const stop = () => {
    running.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
}

main().catch((error) => {
  if (error instanceof ConfigError) {
    console.error(`Configuration error: ${error.message}`)
  } else {
    console.error(error instanceof Error ? error.message : String(error))
  }
  process.exit(1)
})
