/**
 * Why a web fetch did not produce a document. The net layer knows nothing of tools; the
 * tools map each code to an outcome with one exhaustive switch (fetch-page.tool.ts).
 */
export type WebFetchErrorCode =
  /** not a parseable absolute URL */
  | 'invalid_url'
  /** anything but http: / https: */
  | 'unsupported_scheme'
  /** user:password@ in the URL (refused, see WebFetcher) */
  | 'credentials_in_url'
  /** the target (or a redirect hop) is a refused address */
  | 'blocked_address'
  /** a content type (or content encoding) the tools cannot turn into text */
  | 'unsupported_content'
  /** more redirects than allowed, or a redirect without a usable Location */
  | 'too_many_redirects'
  /** HTTP 429 */
  | 'rate_limited'
  /** the fetcher's own deadline passed */
  | 'timeout'
  /** DNS, connect, TLS, protocol or stream failure */
  | 'network';

export class WebFetchError extends Error {
  constructor(
    readonly code: WebFetchErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'WebFetchError';
  }
}
