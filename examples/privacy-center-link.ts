/**
 * A personal link to the hosted privacy center, as an organization's backend makes one for one
 * of its own users: it opens a session with the organization's key, mints a consent token for
 * the user and prints `<page>#token=<consent token>`. Opened, the page reads and records that
 * user's choices with the token, and nothing else. It e-mails nothing: sending the link (to the
 * address the user signed up with, say) is the backend's own business.
 *
 *   CMP_KEY=<key id> CMP_SECRET=<key secret> PRIVACY_CENTER_ID=<center id> USER_ID=u-42 \
 *     pnpm --filter @cmp/examples privacy-link
 *
 * CMP_API is the consent platform's address (default http://127.0.0.1:3000, the server of
 * `pnpm start`); LIFETIME the link's life in seconds (default 86400, at most 2678400). The
 * organization needs the premium feature `consents_api`.
 */

const usage = `Prints a personal link to a privacy center for one user of the organization.

  CMP_KEY            the organization's key id (POST /v1/keys answers it)
  CMP_SECRET         that key's secret, shown once when the key was made
  PRIVACY_CENTER_ID  the privacy center the link opens
  USER_ID            the user's id in your own system (its organization_user_id)
  CMP_API            the platform's address (default http://127.0.0.1:3000)
  LIFETIME           seconds the link stays valid (default 86400, one day; at most 2678400)

  CMP_KEY=… CMP_SECRET=… PRIVACY_CENTER_ID=… USER_ID=u-42 pnpm --filter @cmp/examples privacy-link`

const env = (name: string): string | undefined => {
  const value = process.env[name]?.trim()
  return value === undefined || value === "" ? undefined : value
}
const key = env("CMP_KEY")
const secret = env("CMP_SECRET")
const centerId = env("PRIVACY_CENTER_ID")
const userId = env("USER_ID")
const lifetime = Number(env("LIFETIME") ?? 86_400)
if (key === undefined || secret === undefined || centerId === undefined || userId === undefined || !Number.isInteger(lifetime) || lifetime < 1) {
  console.error(usage)
  process.exit(2)
}
const api = (env("CMP_API") ?? "http://127.0.0.1:3000").replace(/\/+$/, "")

/**
 * One call to the API: its JSON answer; undefined for a 404 when `missing` allows it; else the
 * process ends showing what the API said.
 */
const call = async <A>(method: "GET" | "POST", path: string, accessToken?: string, body?: unknown, missing = false): Promise<A | undefined> => {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(accessToken === undefined ? {} : { authorization: `Bearer ${accessToken}` })
    },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  if (missing && response.status === 404) return undefined
  if (!response.ok) {
    console.error(`${method} ${path}: ${response.status} ${text}`)
    process.exit(1)
  }
  return JSON.parse(text) as A
}

// The organization's own session: an access token for an hour, from its key's id and secret.
// A backend keeps the secret in its secret store and opens a session when it needs one.
const session = (await call<{ access_token: string }>("POST", "/v1/sessions", undefined, { type: "api-key", key, secret }))!

// The center names its organization, which the token is minted in.
const center = (await call<{ id: string; organization_id: string; custom_domains?: ReadonlyArray<string> | null }>(
  "GET",
  `/v1/privacy-centers/${encodeURIComponent(centerId)}`,
  session.access_token
))!

// A consent token: this user's consents, read and recorded, until it expires; nothing else. The
// token is the link's whole credential, so the link is as personal as a password reset link.
const minted = (await call<{ id_token: string; expires_at: string }>("POST", "/v1/consents/tokens", session.access_token, {
  organization_id: center.organization_id,
  organization_user_id: userId,
  lifetime
}))!

// The page: at the center's custom domain once the organization proved it holds the host (a
// `ready` domain of its own for privacy centers), else on the platform's own address.
let page = `${api}/privacy/${encodeURIComponent(center.id)}`
for (const host of center.custom_domains ?? []) {
  // A domain's id is its host name; one of another organization is 404, as one never made.
  const domain = await call<{ usage: string; status: string; enabled: boolean }>(
    "GET",
    `/v1/domains/${encodeURIComponent(host)}`,
    session.access_token,
    undefined,
    true
  )
  if (domain?.usage === "privacy-center" && domain.status === "ready" && domain.enabled) {
    page = `https://${host}/`
    break
  }
}

// In the fragment: a browser never sends it to the server, nor in a Referer; the page's script
// reads it and takes it out of the address bar at once.
const link = new URL(page)
link.hash = `token=${minted.id_token}`
console.log(`A link for ${userId}, valid until ${minted.expires_at}:\n${link.href}`)
