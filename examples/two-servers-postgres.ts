/**
 * Two API processes on two ports against one PostgreSQL, with nothing between them but the
 * database: a write through one is read back through the other. They listen on PORT and the
 * port after it (default 3101 and 3102), on HOST (default 127.0.0.1).
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres pnpm --filter @cmp/examples two-servers
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) {
  console.error("Set DATABASE_URL to a PostgreSQL database, e.g. postgres://postgres@127.0.0.1:5432/postgres")
  process.exit(1)
}
const main = path.join(import.meta.dirname, "..", "packages", "server", "src", "main.ts")
const admin = { key: "admin", secret: "change-me-to-a-long-secret" }
const children: Array<ChildProcess> = []

const start = (port: number) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", main], {
      env: {
        ...process.env,
        PORT: String(port),
        ALLOW_HTTP: "true",
        LOG_LEVEL: "Warning",
        ADMIN_API_KEY: admin.key,
        ADMIN_API_SECRET: admin.secret
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    children.push(child)
    child.stdout!.on("data", (d) => {
      const m = /"url":"([^"]+)"/.exec(String(d))
      if (m) resolve(m[1]!)
    })
    child.on("exit", (code) => reject(new Error(`server on ${port} exited with ${code}`)))
  })

const call = async (url: string, method: string, body?: unknown, token?: string) => {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return await res.json() as Record<string, any>
}

try {
  const first = Number(process.env.PORT || 3101)
  const [a, b] = await Promise.all([start(first), start(first + 1)])
  console.log(`server A: ${a}\nserver B: ${b}`)
  const { access_token } = await call(`${a}/v1/sessions`, "POST", { type: "api-key", ...admin })
  const created = await call(`${a}/v1/organizations`, "POST", { name: `Example ${Date.now()}` }, access_token)
  console.log("created through A:", created.id, created.name)
  // The token works on B too: the signing key is kept in the shared database.
  const read = await call(`${b}/v1/organizations/${created.id}`, "GET", undefined, access_token)
  console.log("read through B:   ", read.id, read.name)
} finally {
  for (const c of children) c.kill("SIGTERM")
}
