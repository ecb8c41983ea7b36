import * as crypto from "node:crypto"
import * as https from "node:https"
import { generate } from "selfsigned"

/**
 * Host names of `example.test` in a browser test: Chromium resolves every one of them to this
 * machine and trusts, by its key, one certificate made here for the names a suite serves, so
 * pages on several origins are served over HTTPS with nothing leaving the machine.
 */

export interface Certificate {
  readonly cert: string
  readonly key: string
}

/** A certificate for these host names and 127.0.0.1 (where the suite's own calls go). */
export const exampleCertificate = async (hosts: ReadonlyArray<string>): Promise<Certificate> => {
  const pems = await generate([{ name: "commonName", value: "example.test" }], {
    keyType: "ec",
    algorithm: "sha256",
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [...hosts.map((value) => ({ type: 2 as const, value })), { type: 7 as const, ip: "127.0.0.1" }] }
    ]
  })
  return { cert: pems.cert, key: pems.private }
}

/** The SHA-256 of the certificate's public key, base64: what Chromium is told to trust. */
const spkiHash = (cert: string): string =>
  crypto.createHash("sha256").update(crypto.createPublicKey(cert).export({ type: "spki", format: "der" })).digest("base64")

/** Chromium's flags for both: every `*.example.test` is 127.0.0.1, and the certificate is trusted. */
export const exampleHostArgs = (cert: string): Array<string> => [
  "--host-resolver-rules=MAP *.example.test 127.0.0.1",
  `--ignore-certificate-errors-spki-list=${spkiHash(cert)}`
]

export interface HttpsReply {
  readonly status: number
  /** Parsed JSON when the answer is JSON, the text otherwise. */
  readonly body: any
  readonly text: string
}

/**
 * A call from this process (a backend) to a server of the suite, over HTTPS with the
 * certificate made here as the one authority (Node's `fetch` takes no authority of its own).
 */
export const httpsCall = (
  base: string,
  ca: string,
  method: string,
  path: string,
  options: { readonly token?: string | undefined; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
): Promise<HttpsReply> =>
  new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.body !== undefined) headers["content-type"] = "application/json"
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    const request = https.request(`${base}${path}`, { method, ca, headers }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (d: string) => (text += d))
      response.on("end", () => {
        const json = (response.headers["content-type"] ?? "").includes("json") && text !== ""
        resolve({ status: response.statusCode ?? 0, body: json ? JSON.parse(text) : text, text })
      })
    })
    request.on("error", reject)
    request.end(options.body === undefined ? undefined : JSON.stringify(options.body))
  })
