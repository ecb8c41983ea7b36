import { onPrimaryColour, primaryColour } from "./Safe.js"

/**
 * The page's stylesheet, served from the page's own origin: the page carries no `style`
 * attribute or element, so a `Content-Security-Policy` of `default-src 'self'` without
 * `'unsafe-inline'` applies to it whole. The organization's colour is the only part that
 * varies, as two custom properties at the top; the rest is the same for every center.
 */

const rules = `
*, *::before, *::after { box-sizing: border-box; }
html { color: #1a1a1a; background: #ffffff; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; line-height: 1.5; }
body { margin: 0; }
a { color: #0b4a8b; }
a:focus-visible, button:focus-visible, input:focus-visible { outline: 3px solid #1a1a1a; outline-offset: 2px; }
.pc-skip { position: absolute; left: -10000px; top: auto; width: 1px; height: 1px; overflow: hidden; }
.pc-skip:focus { position: static; width: auto; height: auto; display: inline-block; padding: 0.5rem 1rem; }
.pc-header { background: var(--pc-primary); color: var(--pc-on-primary); padding: 1rem 1.5rem; display: flex; align-items: center; gap: 1rem; }
.pc-logo { max-height: 3rem; max-width: 12rem; }
.pc-brand { margin: 0; font-size: 1.25rem; font-weight: 600; }
.pc-main { max-width: 48rem; margin: 0 auto; padding: 1.5rem; }
.pc-main h1 { margin-top: 0; }
.pc-section { margin-top: 2rem; }
.pc-table { border-collapse: collapse; width: 100%; }
.pc-table caption { text-align: left; font-weight: 600; padding-bottom: 0.5rem; }
.pc-table th, .pc-table td { border: 1px solid #767676; padding: 0.4rem 0.6rem; text-align: left; vertical-align: top; }
.pc-table thead th { background: #f0f0f0; }
.pc-policy table { border-collapse: collapse; }
.pc-policy th, .pc-policy td { border: 1px solid #767676; padding: 0.3rem 0.5rem; }
.pc-align-left { text-align: left; }
.pc-align-center { text-align: center; }
.pc-align-right { text-align: right; }
.pc-form fieldset { border: 1px solid #767676; padding: 1rem; margin: 0 0 1rem; }
.pc-purpose { margin: 0 0 0.75rem; }
.pc-purpose label { font-weight: 600; margin-left: 0.4rem; }
.pc-description { margin: 0.25rem 0 0 1.8rem; }
.pc-button { background: var(--pc-primary); color: var(--pc-on-primary); border: 2px solid var(--pc-primary); border-radius: 4px; padding: 0.5rem 1.25rem; font: inherit; cursor: pointer; }
.pc-button:disabled { cursor: not-allowed; opacity: 0.6; }
.pc-status { min-height: 1.5em; font-weight: 600; }
.pc-notice { border-left: 4px solid var(--pc-primary); padding: 0.5rem 1rem; background: #f5f5f5; }
.pc-contact { font-style: normal; }
.pc-contact dt { font-weight: 600; }
.pc-contact dd { margin: 0 0 0.5rem; }
.pc-footer { max-width: 48rem; margin: 2rem auto; padding: 0 1.5rem; color: #4a4a4a; font-size: 0.9rem; }
`

/** The colour parts of a center that the stylesheet reads. */
export interface StylesheetCenter {
  readonly customization?: { readonly colors?: { readonly primary?: string | null } | null } | null
}

/**
 * The stylesheet of a center: its primary colour (`#rgb` or `#rrggbb`, else the default) and a
 * text colour on it that reaches 4.5:1, then the page's rules. Without a center (the 404 page)
 * the default colour. The same center version gives the same text, so it caches with the page.
 */
export const renderStylesheet = (center?: StylesheetCenter | null): string => {
  const primary = primaryColour(center?.customization?.colors?.primary)
  return `:root { --pc-primary: ${primary}; --pc-on-primary: ${onPrimaryColour(primary)}; }\n${rules}`
}
