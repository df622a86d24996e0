/**
 * The Content-Security-Policy of the chat page and the debug panel (issue #7).
 *
 * Model output is rendered as Markdown, sanitized by DOMPurify; this policy is the second wall
 * behind it: even HTML that slipped through cannot run a script (only same-origin script files,
 * no inline code, no event-handler attributes), load an image from another host (a tracking
 * pixel in an answer), embed a plugin, rebase relative links, frame the page, or talk to
 * another origin. Styles come from our own file only, so the pages carry no inline style.
 */
export const PAGE_CSP_DIRECTIVES: Readonly<Record<string, string>> = {
  'default-src': "'none'",
  'script-src': "'self'",
  'style-src': "'self'",
  'img-src': "'self' data:",
  'font-src': "'self'",
  'connect-src': "'self'",
  'object-src': "'none'",
  'base-uri': "'none'",
  'form-action': "'self'",
  'frame-ancestors': "'none'",
};

export const PAGE_CSP = Object.entries(PAGE_CSP_DIRECTIVES)
  .map(([name, value]) => `${name} ${value}`)
  .join('; ');

/** Headers sent with every HTML page. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': PAGE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-cache',
};

/** Headers sent with script and style files: revalidated on each load, never MIME-sniffed. */
export const ASSET_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-cache',
};
