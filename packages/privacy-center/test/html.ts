import { HtmlValidate, type RuleConfig } from "html-validate"
import { parse } from "parse5"

/**
 * html-validate's recommended rules, inline styles refused too. Two rules of writing style
 * only, not validity, take the renderer's style (a lower-case doctype, void elements written
 * `<meta/>`); checkboxes of one name are one set of choices, as radio buttons are. A raw `>`
 * in text is valid HTML, which the renderer leaves as it is (it escapes `&`, `<` and `"`, what
 * the syntax needs): `no-raw-characters` would refuse it, so what markup a text makes is
 * checked on the parsed page instead (`unsafeParts`, and each test's look at the elements).
 */
const rules: RuleConfig = {
  "no-inline-style": "error",
  "doctype-style": "off",
  "no-raw-characters": "off",
  "void-style": ["error", { style: "selfclose" }],
  "form-dup-name": ["error", { shared: ["radio", "checkbox", "button", "reset", "submit"] }]
}
const validator = new HtmlValidate({ extends: ["html-validate:recommended"], rules })
/** For a page a DOM wrote back (`outerHTML`): its serializer's writing style is not the renderer's. */
const domValidator = new HtmlValidate({
  extends: ["html-validate:recommended"],
  rules: { ...rules, "void-style": "off", "attribute-boolean-style": "off" }
})

const messagesOf = (report: Awaited<ReturnType<HtmlValidate["validateString"]>>): ReadonlyArray<string> =>
  report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId}: ${m.message} (${m.line}:${m.column})`))

/** The validator's messages for a page, empty when it is valid. */
export const validationErrors = async (html: string): Promise<ReadonlyArray<string>> => messagesOf(await validator.validateString(html))

/** The same for a page as a DOM holds it once a script changed it, serialized by that DOM. */
export const domValidationErrors = async (html: string): Promise<ReadonlyArray<string>> => messagesOf(await domValidator.validateString(html))

export interface Element {
  readonly tag: string
  readonly attrs: ReadonlyArray<{ readonly name: string; readonly value: string }>
  readonly text: string
  readonly children: ReadonlyArray<Element>
}

interface Parse5Node {
  readonly nodeName: string
  readonly tagName?: string
  readonly value?: string
  readonly attrs?: ReadonlyArray<{ name: string; value: string }>
  readonly childNodes?: ReadonlyArray<Parse5Node>
  readonly content?: Parse5Node
}

const toElement = (node: Parse5Node): Element => {
  const children = (node.childNodes ?? []).filter((c) => c.tagName !== undefined).map(toElement)
  const text = (node.childNodes ?? [])
    .map((c) => (c.nodeName === "#text" ? (c.value ?? "") : c.tagName !== undefined ? toElement(c).text : ""))
    .join("")
  return { tag: node.tagName ?? node.nodeName, attrs: node.attrs ?? [], text, children }
}

/** The page as a browser parses it: its `<html>` element. */
export const parsePage = (html: string): Element => {
  const document = parse(html) as unknown as Parse5Node
  const root = (document.childNodes ?? []).find((n) => n.tagName === "html")
  if (root === undefined) throw new Error("no <html> element")
  return toElement(root)
}

/** Every element of a tree, in document order. */
export const elements = (root: Element): ReadonlyArray<Element> => [root, ...root.children.flatMap(elements)]

export const attr = (element: Element, name: string): string | undefined => element.attrs.find((a) => a.name === name)?.value

export const byTag = (root: Element, tag: string): ReadonlyArray<Element> => elements(root).filter((e) => e.tag === tag)

/** The text of the page's `<body>` with runs of white space made one space. */
export const bodyText = (root: Element): string => (byTag(root, "body")[0]?.text ?? "").replace(/\s+/g, " ")

/**
 * What a page must never carry: an inline `<script>` (any without `src`, or any other than the
 * same-origin ones given), a `<style>` element or `style` attribute, an event handler attribute,
 * an address with a scheme that runs code, or an `<iframe>`, `<object>`, `<embed>` or `<base>`.
 */
export const unsafeParts = (root: Element, allowedScripts: ReadonlyArray<string>): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const e of elements(root)) {
    if (e.tag === "script" && (attr(e, "src") === undefined || !allowedScripts.includes(attr(e, "src")!) || e.text.trim() !== ""))
      found.push(`script ${JSON.stringify(e.attrs)}`)
    if (["style", "iframe", "object", "embed", "base", "frame"].includes(e.tag)) found.push(`<${e.tag}>`)
    for (const { name, value } of e.attrs) {
      if (name === "style") found.push(`style attribute on <${e.tag}>`)
      if (/^on/i.test(name)) found.push(`${name} attribute on <${e.tag}>`)
      if (["href", "src", "action", "formaction", "srcset", "xlink:href", "poster", "data"].includes(name)) {
        const scheme = /^\s*([a-z][a-z0-9+.-]*):/i.exec(value.replace(/[\u0000-\u0020]/g, ""))
        if (scheme !== null && !["http", "https", "mailto"].includes(scheme[1].toLowerCase())) found.push(`${name}=${value} on <${e.tag}>`)
      }
    }
  }
  return found
}
