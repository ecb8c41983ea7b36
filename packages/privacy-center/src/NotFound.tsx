import { renderToString } from "preact-render-to-string"
import { chooseLanguage } from "./Language.js"
import { wordLanguages, wordsFor } from "./Words.js"

export interface NotFoundInput {
  /** The request's `Accept-Language`: the page is in the first of the page's languages it finds. */
  readonly acceptLanguage?: string | null
  /** A same-origin stylesheet (`renderStylesheet()`, the default colour), when the server serves one. */
  readonly stylesheet?: string
  /** A same-origin icon, so that the browser does not ask the host for `/favicon.ico`. */
  readonly icon?: string
}

/**
 * The page of an unknown privacy center or host: the same for every unknown id or host name,
 * so it tells nothing of what exists, in the visitor's language among the page's own.
 */
export const renderNotFound = (input: NotFoundInput = {}): { readonly html: string; readonly lang: string } => {
  const lang = chooseLanguage({ acceptLanguage: input.acceptLanguage, languages: wordLanguages })
  const words = wordsFor(lang)
  const page = (
    <html lang={lang}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>{words.notFoundTitle}</title>
        {input.stylesheet !== undefined ? <link rel="stylesheet" href={input.stylesheet} /> : null}
        {input.icon !== undefined ? <link rel="icon" type="image/svg+xml" href={input.icon} /> : null}
      </head>
      <body>
        <main class="pc-main">
          <h1>{words.notFoundTitle}</h1>
          <p>{words.notFoundText}</p>
        </main>
      </body>
    </html>
  )
  return { html: `<!doctype html>${renderToString(page)}`, lang }
}
