import { describe, expect, it } from "vitest"
import {
  type PrivacyCenterData,
  type PrivacyCenterPageInput,
  type PublishedCookie,
  renderNotFound,
  renderPrivacyCenter,
  renderRobotsTxt,
  wordsFor
} from "../src/index.js"
import { attr, bodyText, byTag, type Element, elements, parsePage, unsafeParts, validationErrors } from "./html.js"

const assets = { stylesheet: "/privacy/pc_1/style.css?v=3", script: "/privacy/assets/preferences.js", icon: "/privacy/assets/icon.svg" }

const center: PrivacyCenterData = {
  id: "pc_1",
  organization_id: "org_1",
  name: "Acme privacy center",
  legal_name: "Acme Shop SAS",
  website: "https://www.acme.example.com",
  contact: { email: "privacy@acme.example.com", schedule: "+33 1 23 45 67 89", address: "1 Example Street\n75001 Paris" },
  customization: { logo: "https://cdn.acme.example.com/logo.png", colors: { primary: "#336699" } },
  display_cookies: "choices",
  privacy_policy: "# Who we are\n\nAcme sells things. Write to [us](mailto:privacy@acme.example.com).\n\n## Your rights\n\nSee [the regulator](https://www.cnil.fr/).",
  content: {
    en: { title: "Your privacy at Acme", intro: "We respect your choices.\n\nChange them at any time.", purposes: { analytics: "Audience measurement" } },
    fr: { title: "Votre vie privée chez Acme", purposes: { analytics: "Mesure d'audience", ads: "Publicité" } },
    purposes: [
      { id: "analytics", name: "Analytics", description: "Counting visits to improve the shop." },
      { id: "ads", name: "Advertising" }
    ],
    regulation: "gdpr",
    notice_text_content_id: "ntc_7"
  },
  languages: ["en", "fr", "de"],
  auth_required: false
}

const cookies: ReadonlyArray<PublishedCookie> = [
  { name: "_ga", domain: ".acme.example.com", lifetime: 63_072_000, vendor: "Google Analytics" },
  { name: "session_id", domain: "shop.acme.example.com", lifetime: null },
  { name: "short", domain: "shop.acme.example.com", lifetime: 1, vendor: null },
  { name: "day_and_a_bit", domain: "shop.acme.example.com", lifetime: 86_401 }
]

/** Renders a page and checks what every page must hold: valid HTML, nothing inline, nothing unsafe. */
const render = async (input: Partial<PrivacyCenterPageInput> & { center?: PrivacyCenterData }) => {
  const page = renderPrivacyCenter({ lang: "en", assets, cookies, ...input, center: input.center ?? center })
  expect(await validationErrors(page.html)).toEqual([])
  const root = parsePage(page.html)
  expect(unsafeParts(root, [assets.script])).toEqual([])
  return { page, root }
}

const only = (root: Element, tag: string): Element => {
  const found = byTag(root, tag)
  expect(found).toHaveLength(1)
  return found[0]
}

const headings = (root: Element) => elements(root).filter((e) => /^h[1-6]$/.test(e.tag)).map((e) => `${e.tag}:${e.text}`)

describe("renderPrivacyCenter", () => {
  it("shows the center: name, logo, texts of the language, choices, policy, contact", async () => {
    const { page, root } = await render({})
    expect(page.lang).toBe("en")
    expect(attr(root, "lang")).toBe("en")
    expect(page.imageOrigins).toEqual(["https://cdn.acme.example.com"])
    expect(page.showsChoices).toBe(true)
    expect(attr(only(root, "img"), "src")).toBe("https://cdn.acme.example.com/logo.png")
    expect(only(root, "title").text).toBe("Your privacy at Acme")
    expect(headings(root)).toEqual([
      "h1:Your privacy at Acme",
      "h2:Your choices",
      "h2:Privacy policy",
      "h3:Who we are",
      "h4:Your rights",
      "h2:Contact"
    ])
    const text = bodyText(root)
    expect(text).toContain("Acme privacy center")
    expect(text).toContain("We respect your choices.")
    expect(text).toContain("Change them at any time.")
    expect(text).toContain("Acme Shop SAS")
    expect(text).toContain("+33 1 23 45 67 89")
    expect(text).toContain("1 Example Street75001 Paris")
    expect(byTag(root, "br")).toHaveLength(1)
    const hrefs = byTag(root, "a").map((a) => attr(a, "href"))
    expect(hrefs).toEqual(expect.arrayContaining(["mailto:privacy@acme.example.com", "https://www.cnil.fr/", "https://www.acme.example.com/"]))
  })

  it("links the same-origin stylesheet, icon and script, and nothing else", async () => {
    const { root } = await render({})
    expect(byTag(root, "link").map((l) => [attr(l, "rel"), attr(l, "href")])).toEqual([["stylesheet", assets.stylesheet], ["icon", assets.icon]])
    expect(byTag(root, "script").map((s) => attr(s, "src"))).toEqual([assets.script])
  })

  it("renders the preferences form with a labelled checkbox per purpose and the script's data", async () => {
    const { root } = await render({ publicKey: "pk_live_1", apiBase: "/consent-api/v1" })
    const form = only(root, "form")
    expect(attr(form, "data-center-id")).toBe("pc_1")
    expect(attr(form, "data-organization-id")).toBe("org_1")
    expect(attr(form, "data-public-key")).toBe("pk_live_1")
    expect(attr(form, "data-regulation")).toBe("gdpr")
    expect(attr(form, "data-notice-text-content-id")).toBe("ntc_7")
    expect(attr(form, "data-auth-required")).toBe("false")
    expect(JSON.parse(attr(form, "data-purposes")!)).toEqual(["analytics", "ads"])
    expect(attr(form, "data-api-base")).toBe("/consent-api/v1")
    expect(JSON.parse(attr(form, "data-messages")!)).toEqual(wordsFor("en").messages)

    const boxes = byTag(form, "input")
    expect(boxes.map((b) => [attr(b, "type"), attr(b, "name"), attr(b, "value")])).toEqual([
      ["checkbox", "purpose", "analytics"],
      ["checkbox", "purpose", "ads"]
    ])
    const labels = byTag(form, "label")
    // The language's name of a purpose, else the purpose's own.
    expect(labels.map((l) => l.text)).toEqual(["Audience measurement", "Advertising"])
    expect(labels.map((l) => attr(l, "for"))).toEqual(boxes.map((b) => attr(b, "id")))
    const description = elements(form).find((e) => attr(e, "id") === attr(boxes[0], "aria-describedby"))
    expect(description?.text).toBe("Counting visits to improve the shop.")
    expect(attr(boxes[1], "aria-describedby")).toBeUndefined()
    expect(only(form, "legend").text).toBe("What you allow")
    expect(attr(only(form, "button"), "type")).toBe("submit")
    const status = byTag(form, "p").find((p) => attr(p, "role") === "status")!
    expect(attr(status, "aria-live")).toBe("polite")
    expect(only(form, "noscript").text).toContain("Changing your choices needs JavaScript.")
  })

  it("with auth_required, says how to get a link", async () => {
    const { root } = await render({ center: { ...center, auth_required: true } })
    expect(attr(only(root, "form"), "data-auth-required")).toBe("true")
    const notice = elements(root).find((e) => attr(e, "id") === "pc-auth")!
    expect(notice.text).toContain("open the personal link you were sent")
    expect(byTag(notice, "a").map((a) => attr(a, "href"))).toEqual(["mailto:privacy@acme.example.com"])
  })

  it("defaults the regulation to gdpr and leaves out what content does not fit", async () => {
    const content = {
      en: { title: 42 },
      fr: { title: "Bonjour" },
      purposes: [{ id: "a", name: "A" }, { id: "a", name: "A again" }, { name: "no id" }, "text"],
      regulation: "GDPR!",
      notice_text_content_id: 7,
      custom: { kept: true }
    }
    const { root } = await render({ center: { ...center, content } })
    const form = only(root, "form")
    expect(attr(form, "data-regulation")).toBe("gdpr")
    expect(attr(form, "data-notice-text-content-id")).toBeUndefined()
    expect(byTag(form, "label").map((l) => l.text)).toEqual(["A"])
    expect(only(root, "h1").text).toBe("Acme privacy center")
  })

  it("names a purpose by its own name when the language names it not, whatever its id", async () => {
    const purposes = ["constructor", "__proto__", "toString", "hasOwnProperty"].map((id) => ({ id, name: `Purpose ${id}` }))
    const { root } = await render({ center: { ...center, content: JSON.parse(JSON.stringify({ en: { purposes: { toString: "Named" } }, purposes })) } })
    expect(byTag(root, "label").map((l) => l.text)).toEqual(["Purpose constructor", "Purpose __proto__", "Named", "Purpose hasOwnProperty"])
  })

  it("says there is nothing to choose when content has no purposes", async () => {
    const { root, page } = await render({ center: { ...center, content: null } })
    expect(byTag(root, "form")).toHaveLength(0)
    expect(bodyText(root)).toContain("There is nothing to choose here yet.")
    expect(page.showsChoices).toBe(true)
  })

  it("lists the published cookies with lifetimes in days rounded up, for display_cookies list", async () => {
    const { root, page } = await render({ center: { ...center, display_cookies: "list" } })
    expect(page.showsChoices).toBe(false)
    expect(byTag(root, "form")).toHaveLength(0)
    const table = only(root, "table")
    expect(byTag(table, "th").map((th) => [th.text, attr(th, "scope")])).toEqual([
      ["Name", "col"],
      ["Domain", "col"],
      ["Lifetime", "col"],
      ["Vendor", "col"]
    ])
    expect(byTag(table, "tr").slice(1).map((tr) => byTag(tr, "td").map((td) => td.text))).toEqual([
      ["_ga", ".acme.example.com", "730 days", "Google Analytics"],
      ["session_id", "shop.acme.example.com", "Session", ""],
      ["short", "shop.acme.example.com", "1 day", ""],
      ["day_and_a_bit", "shop.acme.example.com", "2 days", ""]
    ])
  })

  it("says so when no cookie is published", async () => {
    const { root } = await render({ center: { ...center, display_cookies: "list" }, cookies: [] })
    expect(byTag(root, "table")).toHaveLength(0)
    expect(bodyText(root)).toContain("No cookies are published.")
  })

  it("shows neither cookies nor choices for display_cookies none or absent", async () => {
    for (const display_cookies of ["none", null, undefined] as const) {
      const { root, page } = await render({ center: { ...center, display_cookies } })
      expect(byTag(root, "form")).toHaveLength(0)
      expect(byTag(root, "table")).toHaveLength(0)
      expect(page.showsChoices).toBe(false)
      expect(headings(root).filter((h) => h.startsWith("h2:"))).toEqual(["h2:Privacy policy", "h2:Contact"])
    }
  })

  it("renders a center with nothing but a name", async () => {
    const bare: PrivacyCenterData = { id: "pc_2", organization_id: "org_2", name: "Bare", auth_required: false }
    const { root, page } = await render({ center: bare, cookies: [] })
    expect(headings(root)).toEqual(["h1:Bare"])
    expect(byTag(root, "img")).toHaveLength(0)
    expect(page.imageOrigins).toEqual([])
  })

  it("uses the policy the server cached when given one", async () => {
    const { root } = await render({ policyHtml: "<p>cached policy</p>" })
    expect(bodyText(root)).toContain("cached policy")
    expect(bodyText(root)).not.toContain("Acme sells things")
  })

  it("shows the logo only when it is https", async () => {
    for (const logo of ["http://cdn.acme.example.com/logo.png", "javascript:alert(1)", "data:image/png;base64,iVBORw0KGgo=", "//cdn.acme.example.com/x.png", "https://user:pw@cdn.acme.example.com/x.png", "not a url"]) {
      const { root, page } = await render({ center: { ...center, customization: { logo } } })
      expect(byTag(root, "img")).toHaveLength(0)
      expect(page.imageOrigins).toEqual([])
    }
  })

  it("shows the website only when it is http or https, and e-mail links only for plain addresses", async () => {
    const { root } = await render({
      center: { ...center, website: "javascript:alert(1)", contact: { email: "a@b.example?bcc=c@d.example" }, auth_required: true }
    })
    const hrefs = byTag(root, "a").map((a) => attr(a, "href"))
    expect(hrefs.some((h) => h?.startsWith("javascript") || h?.includes("bcc"))).toBe(false)
    expect(bodyText(root)).toContain("a@b.example?bcc=c@d.example")
  })
})

describe("escaping", () => {
  const payloads = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)",
    "javascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    '<a href="javascript:alert(1)">click</a>',
    "</textarea><svg onload=alert(1)>",
    "{{constructor.constructor('alert(1)')()}}"
  ]

  /** Each place a center's or a cookie's text reaches the page, with the payload put there. */
  const places: ReadonlyArray<[string, (p: string) => Partial<PrivacyCenterPageInput> & { center: PrivacyCenterData }, boolean]> = [
    ["name", (p) => ({ center: { ...center, name: p } }), true],
    ["legal_name", (p) => ({ center: { ...center, legal_name: p } }), true],
    ["contact.email", (p) => ({ center: { ...center, contact: { email: p } } }), true],
    ["contact.schedule", (p) => ({ center: { ...center, contact: { schedule: p } } }), true],
    ["contact.address", (p) => ({ center: { ...center, contact: { address: p } } }), true],
    ["website", (p) => ({ center: { ...center, website: p } }), false],
    ["logo", (p) => ({ center: { ...center, customization: { logo: p } } }), false],
    ["colour", (p) => ({ center: { ...center, customization: { colors: { primary: p } } } }), false],
    ["title", (p) => ({ center: { ...center, content: { ...center.content, en: { title: p } } } }), true],
    ["intro", (p) => ({ center: { ...center, content: { ...center.content, en: { intro: p } } } }), true],
    ["purpose name", (p) => ({ center: { ...center, content: { purposes: [{ id: "x", name: p }] } } }), true],
    ["purpose description", (p) => ({ center: { ...center, content: { purposes: [{ id: "x", name: "X", description: p }] } } }), true],
    ["purpose name of the language", (p) => ({ center: { ...center, content: { en: { purposes: { x: p } }, purposes: [{ id: "x", name: "X" }] } } }), true],
    ["purpose id", (p) => ({ center: { ...center, content: { purposes: [{ id: p, name: "X" }] } } }), false],
    ["notice_text_content_id", (p) => ({ center: { ...center, content: { ...center.content, notice_text_content_id: p } } }), false],
    ["cookie name", (p) => ({ center: { ...center, display_cookies: "list" }, cookies: [{ name: p, domain: "a.example" }] }), true],
    ["cookie domain", (p) => ({ center: { ...center, display_cookies: "list" }, cookies: [{ name: "c", domain: p }] }), true],
    ["cookie vendor", (p) => ({ center: { ...center, display_cookies: "list" }, cookies: [{ name: "c", domain: "a.example", vendor: p }] }), true],
    ["privacy policy", (p) => ({ center: { ...center, privacy_policy: p } }), false],
    ["public key", (p) => ({ center, publicKey: p }), false]
  ]

  for (const [place, input, shownAsText] of places) {
    it(`renders ${place} inert`, async () => {
      for (const payload of payloads) {
        const { root } = await render(input(payload))
        if (shownAsText) expect(bodyText(root)).toContain(payload.replace(/\s+/g, " "))
      }
    })
  }

  it("keeps a payload as the attribute's value, not markup", async () => {
    const payload = '"><script>alert(1)</script>'
    const { root } = await render({ center: { ...center, content: { ...center.content, notice_text_content_id: payload } }, publicKey: payload })
    const form = only(root, "form")
    expect(attr(form, "data-notice-text-content-id")).toBe(payload)
    expect(attr(form, "data-public-key")).toBe(payload)
  })
})

describe("the page's own words", () => {
  const expected = {
    en: ["Your choices", "Privacy policy", "Contact", "Save my choices", "Name", "Lifetime", "Session", "2 days"],
    fr: ["Vos choix", "Politique de confidentialité", "Contact", "Enregistrer mes choix", "Nom", "Durée de conservation", "Session", "2 jours"],
    de: ["Ihre Auswahl", "Datenschutzerklärung", "Kontakt", "Auswahl speichern", "Name", "Speicherdauer", "Sitzung", "2 Tage"],
    es: ["Sus preferencias", "Política de privacidad", "Contacto", "Guardar mis preferencias", "Nombre", "Duración", "Sesión", "2 días"],
    it: ["Le tue scelte", "Informativa sulla privacy", "Contatti", "Salva le mie scelte", "Nome", "Durata", "Sessione", "2 giorni"]
  } as const

  for (const [lang, [choices, policy, contact, save, name, lifetime, session, twoDays]] of Object.entries(expected)) {
    it(`are in ${lang}`, async () => {
      const chosen = await render({ lang })
      expect(attr(chosen.root, "lang")).toBe(lang)
      expect(headings(chosen.root)).toEqual(expect.arrayContaining([`h2:${choices}`, `h2:${policy}`, `h2:${contact}`]))
      expect(only(chosen.root, "button").text).toBe(save)
      expect(JSON.parse(attr(only(chosen.root, "form"), "data-messages")!)).toEqual(wordsFor(lang).messages)
      const listed = await render({ lang, center: { ...center, display_cookies: "list" } })
      const table = only(listed.root, "table")
      expect(byTag(table, "th").map((th) => th.text)).toEqual(expect.arrayContaining([name, lifetime]))
      expect(table.text).toContain(session)
      expect(byTag(table, "td").map((td) => td.text)).toContain(twoDays)
    })
  }

  it("are English for another language, whose tag the page still carries", async () => {
    const { root } = await render({ lang: "ja" })
    expect(attr(root, "lang")).toBe("ja")
    expect(only(root, "button").text).toBe("Save my choices")
  })

  it("follow the primary subtag, and the texts the closest language of content", async () => {
    const { root } = await render({ lang: "fr-CA" })
    expect(only(root, "button").text).toBe("Enregistrer mes choix")
    expect(only(root, "h1").text).toBe("Votre vie privée chez Acme")
    expect(byTag(root, "label").map((l) => l.text)).toEqual(["Mesure d'audience", "Publicité"])
  })
})

describe("renderNotFound", () => {
  it("is a valid page in the visitor's language, the same for every unknown address", async () => {
    for (const [acceptLanguage, lang, title] of [
      [null, "en", "Page not found"],
      ["de-AT, fr;q=0.5", "de", "Seite nicht gefunden"],
      ["ja, it;q=0.2", "it", "Pagina non trovata"]
    ] as const) {
      const page = renderNotFound({ acceptLanguage, stylesheet: "/privacy/assets/style.css", icon: "/privacy/assets/icon.svg" })
      expect(page.lang).toBe(lang)
      expect(await validationErrors(page.html)).toEqual([])
      const root = parsePage(page.html)
      expect(unsafeParts(root, [])).toEqual([])
      expect(attr(root, "lang")).toBe(lang)
      expect(only(root, "h1").text).toBe(title)
    }
  })
})

describe("renderRobotsTxt", () => {
  it("follows the domain's bots_crawl, allowing crawlers when none is set", () => {
    expect(renderRobotsTxt("disallow_all")).toBe("User-agent: *\nDisallow: /\n")
    expect(renderRobotsTxt("allow_all")).toBe("User-agent: *\nDisallow:\n")
    expect(renderRobotsTxt(null)).toBe("User-agent: *\nDisallow:\n")
    expect(renderRobotsTxt(undefined)).toBe("User-agent: *\nDisallow:\n")
  })
})
