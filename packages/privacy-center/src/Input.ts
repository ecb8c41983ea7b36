import type { PageContent } from "./Content.js"

/**
 * What the renderer is given: plain data, shaped like the platform's resources so that a stored
 * privacy center (`PrivacyCenter` of `@cmp/core`) can be handed in as it is, but asking only for
 * what the page shows.
 */

export interface PrivacyCenterData {
  readonly id: string
  readonly organization_id: string
  readonly name: string
  readonly legal_name?: string | null
  readonly website?: string | null
  readonly contact?: {
    readonly email?: string | null
    /** A phone number. */
    readonly schedule?: string | null
    readonly address?: string | null
  } | null
  readonly customization?: {
    /** Shown only when https. */
    readonly logo?: string | null
    /** `#rgb` or `#rrggbb`; anything else is the default colour. */
    readonly colors?: { readonly primary?: string | null } | null
  } | null
  readonly display_cookies?: "list" | "choices" | "none" | null
  /** Markdown. */
  readonly privacy_policy?: string | null
  /** Read as `PrivacyCenterContent` of `@cmp/core`; parts that do not fit it are left out. */
  readonly content?: { readonly [key: string]: unknown } | null
  /** Empty or null: any language `content` has texts for. */
  readonly languages?: ReadonlyArray<string> | null
  readonly auth_required: boolean
}

/** A published cookie of the center's organization, as the cookie table shows it. */
export interface PublishedCookie {
  readonly name: string
  readonly domain: string
  /** Seconds, as a cookie resource stores it; none (or 0) is a session cookie. */
  readonly lifetime?: number | null
  /** The vendor's name, when the cookie has a vendor. */
  readonly vendor?: string | null
}

/** Where the page's own files are: same-origin paths (or URLs) the server serves. */
export interface PageAssets {
  /** The center's stylesheet (`renderStylesheet(center)`). */
  readonly stylesheet: string
  /** The preferences script. */
  readonly script: string
  /** The page's icon, so that the browser does not ask the host for `/favicon.ico`. */
  readonly icon?: string
}

export interface PrivacyCenterPageInput {
  readonly center: PrivacyCenterData
  /** The organization's published cookies; shown when `display_cookies` is `list`. */
  readonly cookies?: ReadonlyArray<PublishedCookie>
  /** The page's language, as `chooseLanguage` chose it. */
  readonly lang: string
  readonly assets: PageAssets
  /** Where the page's script reaches the API, `/v1` unless the API is mounted under a prefix. */
  readonly apiBase?: string
  /** The organization's public key for guests' choices, when it has one and guests may choose. */
  readonly publicKey?: string | null
  /**
   * The policy already rendered by `renderPolicy(center.privacy_policy)`, from the server's
   * cache for this version of the center; rendered here when absent.
   */
  readonly policyHtml?: string
  /**
   * `readContent(center.content)`, when the server already read it to choose the language; read
   * here when absent.
   */
  readonly content?: PageContent
}
