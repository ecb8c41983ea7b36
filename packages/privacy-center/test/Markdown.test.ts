import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isSafeLink, renderPolicy } from "../src/index.js"
import { attr, byTag, type Element, elements, parsePage, unsafeParts, validationErrors } from "./html.js"

/** The policy as a browser parses it, inside a page, after checking it keeps the page valid. */
const policy = async (markdown: string): Promise<Element> => {
  const html = `<!doctype html><html lang="en"><head><title>t</title></head><body><main><h1>t</h1><h2>Privacy policy</h2>${renderPolicy(markdown)}</main></body></html>`
  expect(await validationErrors(html)).toEqual([])
  const root = parsePage(html)
  expect(unsafeParts(root, [])).toEqual([])
  return byTag(root, "main")[0]
}

const hrefs = (root: Element) => byTag(root, "a").map((a) => attr(a, "href"))

describe("renderPolicy", () => {
  it("shows raw HTML as text", async () => {
    const main = await policy(
      'Hello <script>alert(1)</script> <img src=x onerror="alert(1)"> <iframe src="https://evil.example"></iframe>\n\n<div onclick="alert(1)">block</div>\n\n<style>body{display:none}</style>'
    )
    expect(main.text).toContain("<script>alert(1)</script>")
    expect(main.text).toContain('<img src=x onerror="alert(1)">')
    expect(main.text).toContain('<div onclick="alert(1)">block</div>')
    expect(elements(main).map((e) => e.tag)).not.toEqual(expect.arrayContaining(["script", "img", "iframe", "div", "style"]))
  })

  it("drops links to any scheme but http, https and mailto, in every form of link", async () => {
    const refused = [
      "[a](javascript:alert(1))",
      "[b](JavaScript:alert(1))",
      "[c](java&#x73;cript:alert(1))",
      "[d](&#106;avascript:alert(1))",
      "[e](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
      "[f](vbscript:msgbox(1))",
      "[g](file:///etc/passwd)",
      "[h](%6Aavascript:alert(1))",
      "[i](<javascript:alert(1)>)",
      "[j][ref]\n\n[ref]: javascript:alert(1)",
      "<javascript:alert(1)>",
      "<data:text/html,hi>",
      "[k](tel:+331234)",
      "[l](java\tscript:alert(1))"
    ]
    for (const markdown of refused) {
      const main = await policy(markdown)
      expect({ markdown, hrefs: hrefs(main) }).toEqual({ markdown, hrefs: [] })
    }
  })

  it("keeps http, https, mailto and relative links, and links bare addresses", async () => {
    const main = await policy(
      "[a](https://www.cnil.fr/) [b](http://example.com/x?y=1#z) [c](mailto:dpo@acme.example) [d](/terms) [e](#rights) [f](../cookies) [g](page.html?x=a:b)\n\nSee https://edpb.europa.eu/ and dpo@acme.example."
    )
    expect(hrefs(main)).toEqual([
      "https://www.cnil.fr/",
      "http://example.com/x?y=1#z",
      "mailto:dpo@acme.example",
      "/terms",
      "#rights",
      "../cookies",
      "page.html?x=a:b",
      "https://edpb.europa.eu/",
      "mailto:dpo@acme.example"
    ])
  })

  it("shows an image as its alternative text, and one of another scheme as the Markdown it is", async () => {
    const main = await policy("![Our *office*](https://acme.example/office.png) and ![pixel](data:image/png;base64,iVBORw0KGgo=)")
    expect(byTag(main, "img")).toHaveLength(0)
    expect(main.text).toContain("Our office and ![pixel](data:image/png;base64,iVBORw0KGgo=)")
  })

  it("keeps headings one level below the page's sections, never skipping a level", async () => {
    const levels = async (markdown: string) =>
      elements(await policy(markdown))
        .filter((e) => /^h[3-6]$/.test(e.tag))
        .map((e) => `${e.tag}:${e.text}`)
    expect(await levels("# A\n\n## B\n\n### C\n\n## D")).toEqual(["h3:A", "h4:B", "h5:C", "h4:D"])
    expect(await levels("## A\n\n#### B\n\n# C")).toEqual(["h3:A", "h4:B", "h3:C"])
    expect(await levels("# A\n\n## B\n\n### C\n\n#### D\n\n##### E\n\n###### F")).toEqual(["h3:A", "h4:B", "h5:C", "h6:D", "h6:E", "h6:F"])
  })

  it("writes a table column's alignment as a class, not a style", async () => {
    const main = await policy("| Data | Kept |\n|:--|--:|\n| e-mail | 3 years |")
    expect(byTag(main, "th").map((th) => attr(th, "class"))).toEqual(["pc-align-left", "pc-align-right"])
    expect(byTag(main, "td").map((td) => attr(td, "class"))).toEqual(["pc-align-left", "pc-align-right"])
  })

  it("renders nothing for no policy, and the same HTML for the same Markdown", () => {
    expect(renderPolicy(null)).toBe("")
    expect(renderPolicy(undefined)).toBe("")
    expect(renderPolicy("  \n ")).toBe("")
    fc.assert(fc.property(fc.string(), (markdown) => renderPolicy(markdown) === renderPolicy(markdown)))
  })

  it("never makes a script, a style, an event attribute or a link of another scheme", () => {
    const pieces = fc.constantFrom(
      "<script>",
      "</script>",
      "<img src=x onerror=alert(1)>",
      "javascript:",
      "data:",
      "[",
      "](",
      ")",
      "<",
      ">",
      "\n\n",
      "![",
      "&#106;",
      "`",
      "|",
      "\n|--|\n",
      " ",
      "https://a.example/",
      "\"",
      "'"
    )
    fc.assert(
      fc.property(fc.array(fc.oneof(pieces, fc.string({ maxLength: 4 })), { maxLength: 30 }), (parts) => {
        const html = `<!doctype html><html lang="en"><head><title>t</title></head><body>${renderPolicy(parts.join(""))}</body></html>`
        expect(unsafeParts(parsePage(html), [])).toEqual([])
      }),
      { numRuns: 300 }
    )
  })
})

describe("isSafeLink", () => {
  it("accepts http, https, mailto and relative addresses only", () => {
    for (const url of ["https://a.example", "HTTP://a.example", "mailto:a@b.example", "/x", "x/y", "#f", "?q=1", "//a.example/x", "x?y=a:b"]) {
      expect({ url, safe: isSafeLink(url) }).toEqual({ url, safe: true })
    }
    for (const url of ["javascript:alert(1)", "data:text/html,x", "vbscript:x", "file:///x", "tel:1", "a:b/c", "java%09script:x", " javascript:x"]) {
      expect({ url, safe: isSafeLink(url) }).toEqual({ url, safe: false })
    }
  })
})
