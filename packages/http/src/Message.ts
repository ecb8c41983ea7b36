/**
 * What the HTTP layer takes and gives: a plain request and a plain response, so any framework
 * (or none) can host the API with a few lines of translation.
 */

export type HeaderValue = string | ReadonlyArray<string> | undefined

export interface ApiRequest {
  readonly method: string
  /** Path and query string relative to where the API is mounted: `/v1/keys?$limit=10`. */
  readonly url: string
  /** Where the host mounted the API (`/consent-api`); empty at the root. */
  readonly mountPath?: string | undefined
  /** Header names in lower case, as Node gives them. */
  readonly headers: Readonly<Record<string, HeaderValue>>
  /** The body as it arrives (a Node request and a web `ReadableStream` are both async iterables). */
  readonly body?: AsyncIterable<Uint8Array> | Uint8Array | string | undefined
  /**
   * The JSON value a host's own body parser (`express.json()`) already made of the body, when it
   * consumed the stream: taken as it is (the host's body limit, charset and encoding handling
   * applied), still refused (415) unless the content type is JSON.
   */
  readonly parsedBody?: unknown
  /** The connection itself is TLS. */
  readonly encrypted: boolean
  /** The peer's address. */
  readonly remoteAddress?: string | undefined
}

export interface ApiResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** Empty for none. */
  readonly body: string | Uint8Array
}

export const header = (headers: ApiRequest["headers"], name: string): string | undefined => {
  const v = headers[name]
  return typeof v === "string" ? v : v?.[0]
}

export const json = (status: number, value: unknown, headers: Record<string, string> = {}): ApiResponse => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", ...headers },
  body: value === undefined ? "" : JSON.stringify(value)
})
