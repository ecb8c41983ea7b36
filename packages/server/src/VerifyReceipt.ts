import { verifyReceipt } from "@cmp/platform"
import * as fs from "node:fs"

/**
 * `pnpm verify-receipt FILE (--jwks FILE | --jwks-url URL | --server URL)`: checks a consent
 * receipt (a `{ receipt, jws }` answer, or the bare JWS) against the platform's public keys,
 * given as a file or fetched, and prints what it says. Exits 0 when it is valid, 1 when it is
 * not, 2 when asked wrongly or when the receipt or the keys cannot be read.
 */

const usage = "usage: verify-receipt FILE (--jwks FILE | --jwks-url URL | --server URL)"

type KeySource = { readonly kind: "file" | "url"; readonly value: string }

const parseArgs = (args: ReadonlyArray<string>): { file: string; keys: KeySource } | undefined => {
  let file: string | undefined
  const keys: Array<KeySource> = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    const [name, inline] = a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined]
    if (name === "--jwks" || name === "--jwks-url" || name === "--server") {
      const value = inline ?? args[++i]
      if (value === undefined || value === "") return undefined
      if (name === "--jwks") keys.push({ kind: "file", value })
      else if (name === "--jwks-url") keys.push({ kind: "url", value })
      else keys.push({ kind: "url", value: `${value.replace(/\/+$/, "")}/v1/consents/receipts/jwks` })
    } else if (a.startsWith("-") || file !== undefined) {
      return undefined
    } else {
      file = a
    }
  }
  return file === undefined || keys.length !== 1 ? undefined : { file, keys: keys[0]! }
}

const readKeys = async (source: KeySource): Promise<unknown> => {
  if (source.kind === "file") return JSON.parse(fs.readFileSync(source.value, "utf8"))
  const answer = await fetch(source.value, { headers: { accept: "application/json" } })
  if (!answer.ok) throw new Error(`${source.value} answered ${answer.status}`)
  return answer.json()
}

const isKeySet = (u: unknown): u is { keys: Array<{ kid?: string }> } =>
  typeof u === "object" && u !== null && Array.isArray((u as { keys?: unknown }).keys)

const text = (u: unknown) => (typeof u === "string" ? u : JSON.stringify(u))

const list = (u: unknown) => (Array.isArray(u) && u.length > 0 ? u.map(text).join(", ") : "none")

const METHODS: Record<string, string> = { public_key: "the public key (a browser or an app)", consent_token: "a consent token", api: "an API credential" }
const WHO: Record<string, string> = { data_subject: "the person", delegate: "a delegate", controller: "the controller" }

/** What a receipt says, in plain text. */
export const describeReceipt = (r: Record<string, any>): Array<string> => {
  const lines = [
    `Receipt ${text(r.receipt_id)} (record ${text(r.record_id)}), made ${text(r.created_at)}`,
    `Schema: ${text(r.schema_version)}`,
    `Person: ${text(r.pii_principal_id)}${r.organization_user_id !== undefined ? ` (the organization's user ${text(r.organization_user_id)})` : ""}`,
    `Controller: ${text(r.controller?.name)} (${text(r.controller?.id)})${r.controller?.url !== undefined ? `, ${text(r.controller.url)}` : ""}`,
    `Jurisdiction: ${text(r.jurisdiction)}`,
    `State: ${text(r.consent_state)}, ${r.expires_at !== undefined ? `expires at ${text(r.expires_at)}` : "no expiry known"}`,
    "Processing:"
  ]
  const processing = Array.isArray(r.processing) ? r.processing : []
  if (processing.length === 0) lines.push("  none")
  for (const p of processing) lines.push(`  ${text(p.purpose_id)}: ${text(p.state)} (${p.legal_basis === "consent" ? "consent" : "legitimate interest"})`)
  const v = r.vendors ?? {}
  lines.push(
    "Vendors:",
    `  consent given: ${list(v.enabled)}; refused: ${list(v.disabled)}`,
    `  legitimate interest accepted: ${list(v.enabled_li)}; objected to: ${list(v.disabled_li)}`,
    `Events (oldest first${r.events_complete === false ? "; older events that no longer explain the state are left out" : ", every one"}):`
  )
  const events = Array.isArray(r.events) ? r.events : []
  if (events.length === 0) lines.push("  none")
  for (const e of events) {
    lines.push(
      `  ${text(e.event_time)} ${text(e.event_id)}: ${text(e.state)}, by ${WHO[e.expressed_by] ?? text(e.expressed_by)} ` +
        `through ${METHODS[e.expression_method] ?? text(e.expression_method)}${e.gpc === true ? ", with Global Privacy Control" : ""}`
    )
    if (e.notice_text_content_id !== undefined) {
      lines.push(`    notice ${text(e.notice_text_content_id)}${e.notice_sha256 !== undefined ? `, SHA-256 ${text(e.notice_sha256)}` : " (its text is gone)"}`)
    }
    for (const sha of Array.isArray(e.proofs_sha256) ? e.proofs_sha256 : []) lines.push(`    proof SHA-256 ${text(sha)}`)
  }
  lines.push(`Consent log head: ${text(r.log_head)}`)
  return lines
}

export const verifyReceiptCommand = async (args: ReadonlyArray<string>) => {
  const parsed = parseArgs(args)
  if (parsed === undefined) {
    console.error(usage)
    process.exitCode = 2
    return
  }
  let input: unknown
  let keys: unknown
  try {
    const raw = fs.readFileSync(parsed.file, "utf8")
    try {
      input = JSON.parse(raw)
    } catch {
      // Not JSON: a bare compact JWS.
      input = raw.trim()
    }
  } catch (error) {
    console.error(`cannot read ${parsed.file}: ${(error as Error).message}`)
    process.exitCode = 2
    return
  }
  try {
    keys = await readKeys(parsed.keys)
  } catch (error) {
    console.error(`cannot read the keys: ${(error as Error).message}`)
    process.exitCode = 2
    return
  }
  if (!isKeySet(keys)) {
    console.error("the keys are not a JWK Set ({ keys: [...] })")
    process.exitCode = 2
    return
  }
  const result = await verifyReceipt(input, keys as Parameters<typeof verifyReceipt>[1])
  const head = result.valid ? `VALID: signed by key ${result.kid}` : `INVALID: ${result.reason}`
  const shown = result.receipt === undefined ? [] : ["", ...describeReceipt(result.receipt)]
  process.stdout.write([head, ...shown].join("\n") + "\n")
  process.exitCode = result.valid ? 0 : 1
}
