/**
 * The checks a value passes before it becomes an address or a colour on the page. Text is
 * escaped by the templates; these are for the places where escaping is not enough (an `href`
 * or `src` can run code or leave the page, a colour goes into CSS).
 */

const parse = (s: string): URL | undefined => {
  try {
    return new URL(s)
  } catch {
    return undefined
  }
}

/** An https URL as the URL parser writes it, else undefined (the logo is https only). */
export const httpsUrl = (value: string | null | undefined): URL | undefined => {
  if (typeof value !== "string") return undefined
  const url = parse(value)
  return url?.protocol === "https:" && url.username === "" && url.password === "" ? url : undefined
}

/** An http or https URL as the URL parser writes it, else undefined (the center's website). */
export const webUrl = (value: string | null | undefined): string | undefined => {
  if (typeof value !== "string") return undefined
  const url = parse(value)
  return url !== undefined && (url.protocol === "https:" || url.protocol === "http:") ? url.href : undefined
}

/**
 * A `mailto:` address for an e-mail address that has nothing but the address in it (no header
 * fields after `?`, no second address), else undefined: the address is still shown as text.
 */
export const mailtoUrl = (email: string | null | undefined): string | undefined =>
  typeof email === "string" && /^[^\s@<>"?&,;:/\\%]+@[A-Za-z0-9.-]+$/.test(email) ? `mailto:${email}` : undefined

/** The primary colour when none is given or the given one is not `#rgb` or `#rrggbb`. */
export const defaultPrimaryColour = "#1d4f91"

/** `#rgb` or `#rrggbb`, lower-cased and written out as `#rrggbb`; anything else is the default. */
export const primaryColour = (value: string | null | undefined): string => {
  if (typeof value !== "string") return defaultPrimaryColour
  const short = /^#([0-9a-f])([0-9a-f])([0-9a-f])$/i.exec(value)
  if (short !== null) return `#${short[1]}${short[1]}${short[2]}${short[2]}${short[3]}${short[3]}`.toLowerCase()
  return /^#[0-9a-f]{6}$/i.test(value) ? value.toLowerCase() : defaultPrimaryColour
}

/** WCAG 2.1 relative luminance of `#rrggbb`. */
const luminance = (hex: string): number => {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/** WCAG 2.1 contrast ratio of two `#rrggbb` colours. */
export const contrastRatio = (a: string, b: string): number => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x)
  return (hi + 0.05) / (lo + 0.05)
}

/**
 * The text colour on the primary colour: black or white, whichever contrasts more. One of the
 * two always reaches 4.5:1 (WCAG AA for text), whatever colour the organization picked.
 */
export const onPrimaryColour = (primary: string): string =>
  contrastRatio(primary, "#000000") >= contrastRatio(primary, "#ffffff") ? "#000000" : "#ffffff"
