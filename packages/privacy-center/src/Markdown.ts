import MarkdownIt, { type MarkdownIt as Parser } from "markdown-it"

/**
 * A privacy policy from Markdown to HTML, with markdown-it:
 *
 * - no raw HTML: `html: false` shows a tag as the text it is;
 * - links only to `http:`, `https:`, `mailto:` and relative addresses; any other scheme
 *   (`javascript:`, `data:`, `vbscript:`, `file:` …) makes the link plain text, in inline,
 *   reference and angle-bracket links alike, and bare addresses become links (`linkify`) by the
 *   same rule;
 * - images are not shown: an image becomes its alternative text (the page's
 *   `Content-Security-Policy` admits no other origin's images but the logo's, and a policy has
 *   no reason to load any);
 * - headings are kept, one level below the page's section heading and never skipping a level
 *   (`#` is the policy's top heading, an `<h3>`; a jump from `#` to `###` becomes `<h4>`), so
 *   the page's outline stays whole;
 * - a table column's alignment is a class (`pc-align-left`, `…-center`, `…-right`), never an
 *   inline `style` attribute, which the page's CSP would refuse.
 *
 * The result depends only on the Markdown: the server may cache it per version of the center.
 */

/** The lowest heading level a policy's heading gets: the page has its `<h1>` and `<h2>` sections. */
const firstPolicyHeadingLevel = 3

const schemePattern = /^([A-Za-z][A-Za-z0-9+.-]*):/

/**
 * Whether a link's address (as markdown-it normalized it: entities decoded, unsafe characters
 * percent-encoded) may be followed: http, https or mailto, or relative with no colon before
 * its first `/`, `?` or `#` (which a browser could read as a scheme).
 */
export const isSafeLink = (url: string): boolean => {
  const trimmed = url.trim()
  const scheme = schemePattern.exec(trimmed)
  if (scheme !== null) return ["http", "https", "mailto"].includes(scheme[1].toLowerCase())
  const firstSegment = trimmed.split(/[/?#]/, 1)[0]
  return !firstSegment.includes(":")
}

const makeParser = (): Parser => {
  const md = new MarkdownIt({ html: false, linkify: true, typographer: false })
  md.validateLink = isSafeLink

  md.renderer.rules.image = (tokens, idx, options, env, self) =>
    md.utils.escapeHtml(self.renderInlineAsText(tokens[idx].children ?? [], options, env))

  md.core.ruler.push("privacy_center_shapes", (state) => {
    let previous = firstPolicyHeadingLevel - 1
    const levels: Array<number> = []
    for (const token of state.tokens) {
      if (token.type === "heading_open") {
        const asked = Number(token.tag.slice(1)) + firstPolicyHeadingLevel - 1
        const level = Math.max(firstPolicyHeadingLevel, Math.min(asked, previous + 1, 6))
        levels.push(level)
        previous = level
        token.tag = `h${level}`
      } else if (token.type === "heading_close") {
        token.tag = `h${levels.shift() ?? firstPolicyHeadingLevel}`
      } else if (token.type === "th_open" || token.type === "td_open") {
        const style = token.attrGet("style")
        if (style !== null) {
          token.attrs = (token.attrs ?? []).filter(([name]) => name !== "style")
          const align = /text-align:(left|center|right)/.exec(String(style))
          if (align !== null) token.attrSet("class", `pc-align-${align[1]}`)
        }
      }
    }
    return true
  })
  return md
}

const parser = makeParser()

/** The policy's HTML, safe to place in the page as it is. */
export const renderPolicy = (markdown: string | null | undefined): string =>
  typeof markdown === "string" && markdown.trim() !== "" ? parser.render(markdown) : ""
