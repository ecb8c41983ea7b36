import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * The hosted pages (privacy centers), as the REST layer hands them a request: served outside
 * `/v1`, without authentication, by whatever package renders them (`@cmp/privacy-center`), so
 * the REST layer stays free of templates and every host serves them alike.
 */

export interface PageRequest {
  /** Upper-case. */
  readonly method: string
  /** Relative to where the pages are mounted, without the query. */
  readonly path: string
  /** Without the `?`. */
  readonly query: string
  /** The `Host` header as sent (a port included), when there is one. */
  readonly host: string | undefined
  readonly acceptLanguage: string | undefined
  /** Where the pages are mounted (`""` at the root): the prefix of the page's own links. */
  readonly base: string
  /** Where the page's script reaches the API (`/v1` under the same mount). */
  readonly apiBase: string
}

export interface PageResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /**
   * The route's template for the request log and metrics (`/privacy/:id`): a center id or a
   * host name is not logged as it was asked.
   */
  readonly route: string
}

export interface PrivacyCenterPagesShape {
  /** Whether a path is one of the pages' own, whatever the host (`/privacy/…`). */
  readonly owns: (path: string) => boolean
  /**
   * The answer for `/privacy/…`, `/` and `/robots.txt` (a page, a file, or the 404 page of an
   * unknown id or host); `undefined` for any other path.
   */
  readonly answer: (request: PageRequest) => Effect.Effect<PageResponse | undefined>
}

export class PrivacyCenterPages extends Context.Tag("@cmp/core/PrivacyCenterPages")<PrivacyCenterPages, PrivacyCenterPagesShape>() {}
