#!/usr/bin/env -S npx tsx
import { createOperatorKey } from "@cmp/core"
import { makeRuntime, startServer } from "@cmp/http-express"
import { ConfigError, fromEnv } from "./Config.js"

/**
 * `pnpm start`: serve the API. `pnpm bootstrap`: print a new operator key and secret as JSON.
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
  if (command !== "serve") throw new ConfigError(`Unknown command '${command}'; use 'serve' or 'bootstrap'`)
  const running = await startServer(options)
  const mode = options.tls ? "https" : options.allowHttp ? "plain http (ALLOW_HTTP, development only)" : "http answering 301 to https"
  const database = options.database === "postgres" ? { database: "postgres" } : { database: "sqlite", sqlite: options.sqlitePath }
  console.log(JSON.stringify({ message: "listening", url: running.url, mode, ...database }))
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
