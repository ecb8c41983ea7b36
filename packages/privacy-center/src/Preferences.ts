import { type Words, wordsFor } from "./Words.js"

/**
 * The preferences page's one script, served same-origin (the page's CSP admits no inline
 * script). It is written here as a type-checked function that uses only the DOM and whatever it
 * is handed, and served as its own source text: no bundler and no Node module is needed to make
 * it, so every runtime that renders the page can serve it too.
 *
 * What it speaks is the REST API at the form's `data-api-base`:
 * - with a consent token (`#token=<jwt>` of a personal link): the person's choices read
 *   (`GET consents/users/<sub>?$by_organization_user_id=true`), recorded
 *   (`POST consents/events`) and their receipt downloaded, with `Authorization: Bearer`;
 * - without one, for a guest, when the page has the organization's public key: choices recorded
 *   with `x-public-api-key` under a guest id this browser keeps; a public key cannot read choices
 *   back, so the last ones saved from this browser are kept beside it to show on the next visit;
 * - else (`auth_required`, or no public key) nothing is recorded: the form is disabled.
 */

/** What the script says, in the page's language (`data-messages`); English when missing. */
type Messages = { -readonly [K in keyof Words["messages"]]: string }

/** The browser code. It may refer to nothing outside itself: it runs alone in the page. */
const preferences = (fallback: Messages): void => {
  const form = document.getElementById("pc-preferences")
  if (!(form instanceof HTMLFormElement)) return
  const data = form.dataset
  const status = document.getElementById("pc-status")
  const submit = form.querySelector<HTMLButtonElement>('button[type="submit"]')
  const boxes = Array.from(form.querySelectorAll<HTMLInputElement>('input[type="checkbox"][name="purpose"]'))

  const parse = (text: string | undefined): unknown => {
    try {
      return JSON.parse(text === undefined ? "" : text)
    } catch (_) {
      return undefined
    }
  }
  const given = parse(data.messages)
  const messages: Messages = { ...fallback }
  if (typeof given === "object" && given !== null) {
    for (const key of Object.keys(fallback) as Array<keyof Messages>) {
      const value = (given as Record<string, unknown>)[key]
      if (typeof value === "string") messages[key] = value
    }
  }
  const listed = parse(data.purposes)
  const purposeIds: Array<string> = Array.isArray(listed) && listed.every((id) => typeof id === "string")
    ? listed
    : boxes.map((box) => box.value)
  const organizationId = data.organizationId || ""
  const centerId = data.centerId || ""
  const regulation = data.regulation || "gdpr"
  const apiBase = (data.apiBase || "/v1").replace(/\/+$/, "")
  const noticeTextContentId = data.noticeTextContentId
  const publicKey = data.publicKey

  const say = (text: string) => {
    if (status !== null) status.textContent = text
  }
  const disableForm = () => {
    for (const box of boxes) box.disabled = true
    if (gpcOverride !== undefined) gpcOverride.disabled = true
    if (submit !== null) submit.disabled = true
  }
  const tick = (enabled: ReadonlyArray<string>) => {
    for (const box of boxes) box.checked = enabled.indexOf(box.value) !== -1
  }

  // The token is taken out of the address bar at once, so that it is neither bookmarked, nor
  // shared with the page's address, nor kept in the history; it lives in this closure only.
  const readToken = (): string | undefined => {
    const params = location.hash.replace(/^#/, "").split("&")
    const at = params.findIndex((p) => p.startsWith("token="))
    if (at === -1) return undefined
    const raw = params[at].slice("token=".length)
    params.splice(at, 1)
    const rest = params.filter((p) => p !== "").join("&")
    history.replaceState(history.state, "", location.pathname + location.search + (rest === "" ? "" : "#" + rest))
    try {
      return decodeURIComponent(raw)
    } catch (_) {
      return undefined
    }
  }
  interface Claims {
    readonly org: string
    readonly sub: string
    readonly exp: number
  }
  // Read, not verified: the API verifies the token on every call. This only spares a request
  // that could not succeed and says why.
  const claimsOf = (token: string): Claims | undefined => {
    const parts = token.split(".")
    if (parts.length !== 3) return undefined
    try {
      const base64 = parts[1].replace(/-/g, "+").replace(/_/g, "/")
      const binary = atob(base64 + "===".slice((base64.length + 3) % 4))
      const bytes = new Uint8Array(binary.length)
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
      const payload: unknown = JSON.parse(new TextDecoder().decode(bytes))
      if (typeof payload !== "object" || payload === null) return undefined
      const { org, sub, exp } = payload as Record<string, unknown>
      return typeof org === "string" && typeof sub === "string" && sub !== "" && typeof exp === "number" ? { org, sub, exp } : undefined
    } catch (_) {
      return undefined
    }
  }

  // Private browsing may refuse storage, even to look at it: the page then works for this visit.
  const storage = (): Storage | undefined => {
    try {
      return window.localStorage
    } catch (_) {
      return undefined
    }
  }
  const stored = (key: string): string | undefined => {
    try {
      const value = storage()?.getItem(key)
      return typeof value === "string" ? value : undefined
    } catch (_) {
      return undefined
    }
  }
  const store = (key: string, value: string) => {
    try {
      storage()?.setItem(key, value)
    } catch (_) {
      // Kept for this visit only.
    }
  }
  const guestKey = "cmp-privacy-center:guest:" + organizationId
  const choicesKey = "cmp-privacy-center:choices:" + centerId
  // A version 4 UUID where `randomUUID` is missing (a page served over plain http).
  const randomId = () => {
    const b = crypto.getRandomValues(new Uint8Array(16))
    b[6] = (b[6] & 0x0f) | 0x40
    b[8] = (b[8] & 0x3f) | 0x80
    const hex = Array.from(b, (x) => (x + 0x100).toString(16).slice(1)).join("")
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20)
  }
  let guestId: string | undefined = stored(guestKey)
  // Made on the first save, not on a visit: a visitor who chooses nothing leaves nothing behind.
  const ensureGuestId = (): string => {
    if (guestId === undefined) {
      guestId = typeof crypto.randomUUID === "function" ? crypto.randomUUID() : randomId()
      store(guestKey, guestId)
    }
    return guestId
  }

  // Global Privacy Control: what the signal refuses stays refused unless the person, shown it,
  // ticks the opt-in; the API reads the signal from the `Sec-GPC` header the browser sends.
  let gpcOverride: HTMLInputElement | undefined
  const showGpc = () => {
    if ((navigator as Navigator & { globalPrivacyControl?: unknown }).globalPrivacyControl !== true) return
    const notice = document.createElement("p")
    notice.id = "pc-gpc"
    notice.className = "pc-notice"
    notice.textContent = messages.gpc
    const line = document.createElement("div")
    line.className = "pc-purpose"
    gpcOverride = document.createElement("input")
    gpcOverride.type = "checkbox"
    gpcOverride.id = "pc-gpc-override"
    gpcOverride.setAttribute("aria-describedby", notice.id)
    const label = document.createElement("label")
    label.htmlFor = gpcOverride.id
    label.textContent = messages.gpcOverride
    line.append(gpcOverride, label)
    form.insertBefore(notice, submit)
    form.insertBefore(line, submit)
  }

  const bodyOf = (user: Record<string, string>) => {
    const body: Record<string, unknown> = {
      regulation,
      user,
      consents: {
        purposes: purposeIds.map((id) => ({ id, enabled: boxes.some((box) => box.value === id && box.checked) }))
      }
    }
    if (noticeTextContentId !== undefined && noticeTextContentId !== "") body.notice_text_content_id = noticeTextContentId
    if (gpcOverride !== undefined && gpcOverride.checked) body.gpc_override = true
    return body
  }
  let saving = false
  const onSubmit = (headers: Record<string, string>, user: () => Record<string, string>, saved: () => void) => {
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      if (saving) return
      saving = true
      if (submit !== null) submit.disabled = true
      // The ticks stay as they are whatever the answer: a failed save can be tried again.
      fetch(apiBase + "/consents/events", {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(bodyOf(user())),
        credentials: "omit"
      })
        .then((response) => {
          if (response.status === 201) {
            saved()
            say(messages.saved)
          } else say(response.status === 401 ? messages.expired : messages.error)
        })
        .catch(() => say(messages.error))
        .then(() => {
          saving = false
          if (submit !== null) submit.disabled = false
        })
    })
  }

  const withToken = (token: string, claims: Claims) => {
    const bearer = { authorization: "Bearer " + token }
    const userPath = apiBase + "/consents/users/" + encodeURIComponent(claims.sub)
    const query = "?$by_organization_user_id=true&regulation=" + encodeURIComponent(regulation)
    let receipt: HTMLButtonElement | undefined
    const offerReceipt = () => {
      if (receipt !== undefined) return
      receipt = document.createElement("button")
      receipt.type = "button"
      receipt.id = "pc-receipt"
      receipt.className = "pc-button pc-secondary"
      receipt.textContent = messages.receipt
      receipt.addEventListener("click", () => {
        fetch(userPath + "/receipt" + query, { headers: bearer, cache: "no-store", credentials: "omit" })
          .then((response) => {
            if (response.status !== 200) return say(response.status === 401 ? messages.expired : messages.error)
            return response.text().then((text) => {
              const url = URL.createObjectURL(new Blob([text], { type: "application/json" }))
              const link = document.createElement("a")
              link.href = url
              link.download = "receipt.json"
              link.hidden = true
              document.body.append(link)
              link.click()
              link.remove()
              URL.revokeObjectURL(url)
            })
          })
          .catch(() => say(messages.error))
      })
      if (submit !== null) submit.after(receipt)
      else form.append(receipt)
    }

    // A token the API refuses leaves the form disabled: nothing can be recorded with it.
    let locked = false
    say(messages.loading)
    // Saving before the choices are shown would overwrite them with blank ones.
    if (submit !== null) submit.disabled = true
    fetch(userPath + query, { headers: bearer, cache: "no-store", credentials: "omit" })
      .then((response) => {
        if (response.status === 404) return say("")
        if (response.status === 401) {
          locked = true
          disableForm()
          return say(messages.expired)
        }
        if (response.status !== 200) return say(messages.error)
        return response.json().then((body: unknown) => {
          const consents = typeof body === "object" && body !== null ? (body as { consents?: { purposes?: unknown } }).consents : undefined
          const purposes = consents !== undefined && consents !== null && Array.isArray(consents.purposes) ? consents.purposes : []
          tick(purposes.filter((p) => typeof p === "object" && p !== null && p.enabled === true).map((p) => String(p.id)))
          say("")
          offerReceipt()
        })
      })
      .catch(() => say(messages.error))
      .then(() => {
        if (submit !== null && !locked) submit.disabled = false
      })
    showGpc()
    onSubmit(bearer, () => ({ organization_user_id: claims.sub }), offerReceipt)
  }

  const asGuest = (key: string) => {
    const last = parse(stored(choicesKey))
    if (Array.isArray(last)) tick(last.filter((id): id is string => typeof id === "string"))
    showGpc()
    onSubmit({ "x-public-api-key": key }, () => ({ id: ensureGuestId() }), () =>
      store(choicesKey, JSON.stringify(boxes.filter((box) => box.checked).map((box) => box.value))))
  }

  const token = readToken()
  const claims = token === undefined ? undefined : claimsOf(token)
  if (token !== undefined && claims === undefined) say(messages.expired)
  else if (claims !== undefined && claims.org !== organizationId) say(messages.wrongOrganization)
  else if (claims !== undefined && claims.exp * 1000 <= Date.now()) say(messages.expired)
  else if (token !== undefined && claims !== undefined) return withToken(token, claims)

  if (data.authRequired !== "true" && publicKey !== undefined && publicKey !== "") asGuest(publicKey)
  else disableForm()
}

/**
 * The script's JavaScript source as served. A build that keeps function names (esbuild's
 * `keepNames`, which `tsx` turns on) calls its module-level `__name` helper from inside the
 * function; the served script defines it as the identity, so the source runs alone whatever
 * compiled it. The English messages are handed in as JSON: one copy of the words, in `Words`.
 */
export const preferencesScript: string =
  `(function () {\n"use strict";\nvar __name = function (f) { return f; };\n(${preferences.toString()})(${JSON.stringify(wordsFor("en").messages)});\n})();\n`

/** FNV-1a, 32 bits, over the UTF-8 bytes: a content hash with no library and no Node module. */
const fnv1a = (text: string): string => {
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode(text)) hash = Math.imul(hash ^ byte, 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, "0")
}

/** The script's file name, `preferences-<8 hex>.js`: it changes with the source, so it may be cached for good. */
export const preferencesScriptName: string = `preferences-${fnv1a(preferencesScript)}.js`
