import type { ComponentChildren } from "preact"
import { renderToString } from "preact-render-to-string"
import { type PageContent, readContent } from "./Content.js"
import type { PrivacyCenterData, PrivacyCenterPageInput, PublishedCookie } from "./Input.js"
import { lookupRange } from "./Language.js"
import { renderPolicy } from "./Markdown.js"
import { httpsUrl, mailtoUrl, webUrl } from "./Safe.js"
import { type Words, wordsFor } from "./Words.js"

/**
 * The page, as Preact components rendered to a string: every text and attribute value is
 * escaped by the renderer, so a center's name, texts, purposes and cookies are shown as the
 * text they are. The one piece of HTML placed as it is, the policy, comes from `renderPolicy`.
 * No `<script>` but the same-origin `src` one, no `style` attribute or element, no event
 * attribute: what the script needs is in the form's `data-` attributes.
 */

export interface RenderedPage {
  readonly html: string
  /** The page's language, as `<html lang>` says it. */
  readonly lang: string
  /** The origins of the page's images (the logo's), for the `img-src` of its CSP. */
  readonly imageOrigins: ReadonlyArray<string>
  /**
   * Whether the page is the preferences page (`display_cookies: "choices"`), where the script
   * shows a person's choices: the server answers it with `Cache-Control: no-store`.
   */
  readonly showsChoices: boolean
}

const secondsPerDay = 86_400

/** A cookie's lifetime in whole days, rounded up; none or zero is a session cookie. */
export const cookieLifetime = (lifetime: number | null | undefined, words: Words): string =>
  typeof lifetime === "number" && Number.isFinite(lifetime) && lifetime > 0
    ? words.days(Math.ceil(lifetime / secondsPerDay))
    : words.session

/** Plain text in paragraphs: a blank line separates two. */
const Paragraphs = ({ text, className }: { text: string; className?: string }) => (
  <>
    {text
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter((p) => p !== "")
      .map((p) => (
        <p class={className}>{p}</p>
      ))}
  </>
)

/** Plain text whose line breaks are kept (a postal address). */
const Lines = ({ text }: { text: string }) => (
  <>
    {text.split(/\r?\n/).map((line, i) => (
      <>
        {i > 0 ? <br /> : null}
        {line}
      </>
    ))}
  </>
)

const Section = ({ id, title, children }: { id: string; title: string; children: ComponentChildren }) => (
  <section class="pc-section" aria-labelledby={`${id}-title`}>
    <h2 id={`${id}-title`}>{title}</h2>
    {children}
  </section>
)

const CookieTable = ({ cookies, words }: { cookies: ReadonlyArray<PublishedCookie>; words: Words }) =>
  cookies.length === 0 ? (
    <p>{words.noCookies}</p>
  ) : (
    <table class="pc-table">
      <caption>{words.cookiesCaption}</caption>
      <thead>
        <tr>
          <th scope="col">{words.cookieName}</th>
          <th scope="col">{words.cookieDomain}</th>
          <th scope="col">{words.cookieLifetime}</th>
          <th scope="col">{words.cookieVendor}</th>
        </tr>
      </thead>
      <tbody>
        {cookies.map((cookie) => (
          <tr>
            <td>{cookie.name}</td>
            <td>{cookie.domain}</td>
            <td>{cookieLifetime(cookie.lifetime, words)}</td>
            <td>{cookie.vendor ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )

interface ChoicesProps {
  readonly center: PrivacyCenterData
  readonly content: PageContent
  readonly purposeNames: Readonly<Record<string, string>>
  readonly lang: string
  readonly words: Words
  readonly apiBase: string
  readonly publicKey: string | undefined
}

const Choices = ({ center, content, purposeNames, lang, words, apiBase, publicKey }: ChoicesProps) => {
  const email = center.contact?.email ?? undefined
  const mailto = mailtoUrl(email)
  return (
    <Section id="pc-choices" title={words.yourChoices}>
      {center.auth_required || publicKey === undefined ? (
        <p class="pc-notice" id="pc-auth">
          {words.authRequired}
          {email !== undefined && email !== null ? (
            <>
              {" "}
              {mailto !== undefined ? <a href={mailto}>{email}</a> : email}
            </>
          ) : null}
        </p>
      ) : null}
      {content.purposes.length === 0 ? (
        <p>{words.noPurposes}</p>
      ) : (
        <form
          id="pc-preferences"
          class="pc-form"
          data-center-id={center.id}
          data-organization-id={center.organization_id}
          data-public-key={publicKey}
          data-regulation={content.regulation}
          data-notice-text-content-id={content.noticeTextContentId}
          data-auth-required={center.auth_required ? "true" : "false"}
          data-purposes={JSON.stringify(content.purposes.map((p) => p.id))}
          data-api-base={apiBase}
          data-lang={lang}
          data-messages={JSON.stringify(words.messages)}
        >
          <fieldset>
            <legend>{words.choicesLegend}</legend>
            {content.purposes.map((purpose, index) => {
              const id = `pc-purpose-${index}`
              const description = purpose.description?.trim()
              return (
                <div class="pc-purpose">
                  <input
                    type="checkbox"
                    id={id}
                    name="purpose"
                    value={purpose.id}
                    aria-describedby={description ? `${id}-description` : undefined}
                  />
                  <label for={id}>{Object.hasOwn(purposeNames, purpose.id) ? purposeNames[purpose.id] : purpose.name}</label>
                  {description ? (
                    <p class="pc-description" id={`${id}-description`}>
                      {description}
                    </p>
                  ) : null}
                </div>
              )
            })}
          </fieldset>
          <button type="submit" class="pc-button">
            {words.save}
          </button>
          <p class="pc-status" id="pc-status" role="status" aria-live="polite"></p>
          <noscript>
            <p>{words.needsJavaScript}</p>
          </noscript>
        </form>
      )}
    </Section>
  )
}

const Contact = ({ center, words }: { center: PrivacyCenterData; words: Words }) => {
  const contact = center.contact ?? {}
  const email = contact.email ?? undefined
  const mailto = mailtoUrl(email)
  const phone = contact.schedule ?? undefined
  const address = contact.address ?? undefined
  const website = webUrl(center.website)
  const legalName = center.legal_name ?? undefined
  if (!email && !phone && !address && !website && !legalName) return null
  return (
    <Section id="pc-contact" title={words.contact}>
      <address class="pc-contact">
        {legalName ? <p>{legalName}</p> : null}
        <dl>
          {email ? (
            <>
              <dt>{words.email}</dt>
              <dd>{mailto !== undefined ? <a href={mailto}>{email}</a> : email}</dd>
            </>
          ) : null}
          {phone ? (
            <>
              <dt>{words.phone}</dt>
              <dd>{phone}</dd>
            </>
          ) : null}
          {address ? (
            <>
              <dt>{words.address}</dt>
              <dd>
                <Lines text={address} />
              </dd>
            </>
          ) : null}
          {website ? (
            <>
              <dt>{words.website}</dt>
              <dd>
                <a href={website}>{website}</a>
              </dd>
            </>
          ) : null}
        </dl>
      </address>
    </Section>
  )
}

/** The texts of `content` for the page's language: its own, else the closest by lookup. */
const textsFor = (content: PageContent, lang: string) => {
  const key = lookupRange(lang, content.languages)
  return key === undefined ? undefined : content.texts.get(key)
}

/**
 * The privacy center's page in `lang`, the language `chooseLanguage` chose: the name and logo,
 * the title and introduction of `content[lang]`, the choices (`display_cookies: "choices"`) or
 * the cookie table (`"list"`), the privacy policy and the contact.
 */
export const renderPrivacyCenter = (input: PrivacyCenterPageInput): RenderedPage => {
  const { center, lang } = input
  const words = wordsFor(lang)
  const content = input.content ?? readContent(center.content)
  const texts = textsFor(content, lang)
  const logo = httpsUrl(center.customization?.logo)
  const title = texts?.title ?? center.name
  const policyHtml = input.policyHtml ?? renderPolicy(center.privacy_policy)
  const display = center.display_cookies ?? "none"
  const showsChoices = display === "choices"
  const page = (
    <html lang={lang}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>{title}</title>
        <link rel="stylesheet" href={input.assets.stylesheet} />
        {input.assets.icon !== undefined ? <link rel="icon" type="image/svg+xml" href={input.assets.icon} /> : null}
        <script src={input.assets.script} defer></script>
      </head>
      <body>
        <a class="pc-skip" href="#pc-main">
          {words.skipToContent}
        </a>
        <header class="pc-header">
          {logo !== undefined ? <img class="pc-logo" src={logo.href} alt="" /> : null}
          <p class="pc-brand">{center.name}</p>
        </header>
        <main class="pc-main" id="pc-main">
          <h1>{title}</h1>
          {texts?.intro ? <Paragraphs text={texts.intro} className="pc-intro" /> : null}
          {showsChoices ? (
            <Choices
              center={center}
              content={content}
              purposeNames={texts?.purposes ?? {}}
              lang={lang}
              words={words}
              apiBase={input.apiBase ?? "/v1"}
              publicKey={input.publicKey ?? undefined}
            />
          ) : null}
          {display === "list" ? (
            <Section id="pc-cookies" title={words.cookies}>
              <CookieTable cookies={input.cookies ?? []} words={words} />
            </Section>
          ) : null}
          {policyHtml !== "" ? (
            <Section id="pc-policy" title={words.privacyPolicy}>
              <div class="pc-policy" dangerouslySetInnerHTML={{ __html: policyHtml }} />
            </Section>
          ) : null}
          <Contact center={center} words={words} />
        </main>
        {center.legal_name ? (
          <footer class="pc-footer">
            <p>{center.legal_name}</p>
          </footer>
        ) : null}
      </body>
    </html>
  )
  return {
    html: `<!doctype html>${renderToString(page)}`,
    lang,
    imageOrigins: logo !== undefined ? [logo.origin] : [],
    showsChoices
  }
}
