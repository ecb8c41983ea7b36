/**
 * The hosted privacy center, rendered from plain data to HTML on any JavaScript runtime (no
 * Node module): the page (`renderPrivacyCenter`), its policy alone for the server's cache
 * (`renderPolicy`), its stylesheet (`renderStylesheet`), the language a request gets
 * (`chooseLanguage`), the 404 page (`renderNotFound`), `robots.txt` (`renderRobotsTxt`) and the
 * preferences page's script (`preferencesScript`, served as `preferencesScriptName`).
 */
export { type PageContent, readContent } from "./Content.js"
/** The schema of `content` lives in core, which checks writes with it; here for the renderer's users. */
export { PrivacyCenterContent, PrivacyCenterPurpose, PrivacyCenterTexts } from "@cmp/core"
export type { PageAssets, PrivacyCenterData, PrivacyCenterPageInput, PublishedCookie } from "./Input.js"
export { chooseLanguage, fallbackLanguage, type LanguageChoice, lookupRange, parseAcceptLanguage, type WeightedRange } from "./Language.js"
export { isSafeLink, renderPolicy } from "./Markdown.js"
export { type NotFoundInput, renderNotFound } from "./NotFound.js"
export { cookieLifetime, type RenderedPage, renderPrivacyCenter } from "./Page.js"
export { preferencesScript, preferencesScriptName } from "./Preferences.js"
export { renderRobotsTxt } from "./Robots.js"
export { contrastRatio, defaultPrimaryColour, onPrimaryColour, primaryColour } from "./Safe.js"
export { renderStylesheet, type StylesheetCenter } from "./Stylesheet.js"
export { wordLanguages, type Words, wordsFor } from "./Words.js"
export { makePrivacyCenterPages, PrivacyCenterPagesLive } from "./Pages.js"
