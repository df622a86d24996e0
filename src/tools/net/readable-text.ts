import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { countChar, nestingDepth, stripTags, titleOf } from './html-scan';

/**
 * HTML → the text a reader would see: Mozilla Readability (Firefox Reader View) picks the
 * article out of a linkedom document; when it finds none, the whole body is used minus
 * scripts, styles and page chrome. Block elements become line breaks, list items "- " lines,
 * whitespace is collapsed, and the result is cut at `maxChars`.
 */

/**
 * Defaults. 20 000 characters (~5 000 tokens) keeps one page well under TOOL_RESULT_MAX_BYTES
 * (64 KiB).
 *
 * Readability runs on the event loop, and on linkedom its cost grows with the node count
 * (~0.6 s for 40 000 nodes on this project's machines) and explodes with nesting depth
 * (0.7 s at depth 400, 18 s at 1 000). It also re-serializes and re-parses the page, and
 * linkedom splits text at every entity, so each `<`, `>` or `&` in the text becomes a node
 * then (2 MB of "<" took 278 s). A page over the work budget skips Readability for the
 * linear walk; real pages stay far below it.
 */
export const READABLE_TEXT_DEFAULTS = {
  maxChars: 20_000,
  excerptChars: 300,
  /** nodes + escapable characters in text */
  readabilityMaxWork: 40_000,
  readabilityMaxDepth: 160,
  /** beyond this estimated depth, or this many "<", not even linkedom parses the page
   * (see html-scan.ts); a 2 MB real page has well under 100 000 tags */
  domMaxDepth: 2_000,
  domMaxTags: 150_000,
} as const;

export interface ReadableText {
  title: string;
  text: string;
  /** a short summary (Readability's excerpt, the meta description, or the text's start) */
  excerpt: string;
  byline?: string;
  siteName?: string;
  /** the text was cut at maxChars */
  truncated: boolean;
}

export interface ReadableTextOptions {
  maxChars?: number;
}

/** Structural skip lists: never text, and page chrome dropped when there is no article. */
const NEVER_TEXT = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'OBJECT', 'EMBED', 'HEAD', 'TITLE', 'META', 'LINK', 'SELECT']);
const CHROME = new Set(['NAV', 'HEADER', 'FOOTER', 'ASIDE', 'FORM', 'BUTTON']);
const PARAGRAPH = new Set(['P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'BLOCKQUOTE', 'PRE', 'TABLE', 'UL', 'OL', 'DL', 'FIGURE', 'HR']);
const BLOCK = new Set(['DIV', 'SECTION', 'ARTICLE', 'MAIN', 'ADDRESS', 'DD', 'DT', 'FIELDSET', 'FIGCAPTION', 'TR', 'CAPTION', 'DETAILS', 'SUMMARY', 'HEADER', 'FOOTER', 'NAV', 'ASIDE', 'FORM', 'TBODY', 'THEAD', 'TFOOT', 'BODY', 'HTML']);

interface DomNode {
  nodeType: number;
  nodeName: string;
  nodeValue?: string | null;
  childNodes: ArrayLike<DomNode>;
}

/**
 * Text of a DOM subtree with block structure kept as line breaks. Iterative, so a hostile
 * page with 100 000 nested elements cannot overflow the stack.
 */
export function domToText(root: DomNode, skip: ReadonlySet<string> = NEVER_TEXT): string {
  const out: string[] = [];
  const stack: Array<DomNode | string> = [root];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    if (item.nodeType === 3) {
      out.push(item.nodeValue ?? '');
      continue;
    }
    if (item.nodeType !== 1 && item.nodeType !== 9 && item.nodeType !== 11) continue;
    const name = item.nodeName.toUpperCase();
    if (skip.has(name)) continue;
    let before = '';
    let after = '';
    if (name === 'BR') before = '\n';
    else if (name === 'LI') before = '\n- ';
    else if (PARAGRAPH.has(name)) [before, after] = ['\n\n', '\n\n'];
    else if (BLOCK.has(name)) [before, after] = ['\n', '\n'];
    else if (name === 'TD' || name === 'TH') after = ' ';
    out.push(before);
    stack.push(after);
    const kids = item.childNodes;
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
  return out.join('');
}

/** Whether a tree is small and shallow enough for Readability (see READABLE_TEXT_DEFAULTS). */
function withinReadabilityLimits(root: DomNode | null): boolean {
  if (!root) return false;
  const { readabilityMaxWork, readabilityMaxDepth } = READABLE_TEXT_DEFAULTS;
  let work = 0;
  const stack: Array<[DomNode, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > readabilityMaxDepth) return false;
    work += 1;
    if (node.nodeType === 3) {
      const text = node.nodeValue ?? '';
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x3c || c === 0x3e || c === 0x26 || c === 0xa0) work++;
      }
    }
    if (work > readabilityMaxWork) return false;
    const kids = node.childNodes;
    for (let i = 0; i < kids.length; i++) if (kids[i].nodeType === 1 || kids[i].nodeType === 3) stack.push([kids[i], depth + 1]);
  }
  return true;
}

/** Collapses runs of spaces, trims lines, and keeps at most one blank line in a row. */
export function collapseWhitespace(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\u200b\u200c\u200d\ufeff]/g, '')
    .replace(/[^\S\n]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Cuts at `maxChars` without splitting a surrogate pair. */
export function capText(text: string, maxChars: number): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  let end = maxChars;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return { text: text.slice(0, end), truncated: true };
}

export function excerptOf(text: string, maxChars: number = READABLE_TEXT_DEFAULTS.excerptChars): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= maxChars ? flat : `${capText(flat, maxChars - 1).text}…`;
}

/** linkedom builds no implied <html>/<body>: fragments are wrapped so `document.body` exists. */
function parse(html: string) {
  const full = /<html[\s>]/i.test(html) ? html : `<!doctype html><html><head></head><body>${html}</body></html>`;
  return parseHTML(full).document;
}

function metaDescription(document: ReturnType<typeof parse>): string | undefined {
  for (const meta of Array.from(document.querySelectorAll('meta'))) {
    const key = (meta.getAttribute('name') ?? meta.getAttribute('property') ?? '').toLowerCase();
    if (key === 'description' || key === 'og:description') return clean(meta.getAttribute('content'));
  }
  return undefined;
}

const clean = (s: string | null | undefined) => (s ? s.replace(/\s+/g, ' ').trim() : '') || undefined;

/** Extracts the readable text of an HTML document. Never throws on bad HTML. */
export function extractReadableText(html: string, options: ReadableTextOptions = {}): ReadableText {
  const maxChars = options.maxChars ?? READABLE_TEXT_DEFAULTS.maxChars;
  const { domMaxDepth, domMaxTags } = READABLE_TEXT_DEFAULTS;
  if (countChar(html, '<', domMaxTags + 1) > domMaxTags || nestingDepth(html, domMaxDepth) >= domMaxDepth) {
    const { text, truncated } = capText(collapseWhitespace(stripTags(html)), maxChars);
    return { title: clean(titleOf(html)) ?? '', text, excerpt: excerptOf(text), truncated };
  }
  const document = parse(html);
  const pageTitle = clean(document.title) ?? clean(titleOf(html));
  const description = metaDescription(document);

  let article: ReturnType<Readability<string>['parse']> = null;
  const useReadability = withinReadabilityLimits(document.documentElement as unknown as DomNode);
  if (useReadability) {
    try {
      article = new Readability<string>(document as unknown as Document, {
        serializer: (node) => domToText(node as unknown as DomNode),
      }).parse();
    } catch {
      article = null; // malformed documents: fall back to the body text below
    }
  }
  let raw = article?.content ?? '';
  if (!collapseWhitespace(raw)) {
    // Readability found nothing (and may have mutated the document it gave up on): walk the
    // page itself, re-parsed only when Readability touched it.
    const fresh = useReadability ? parse(html) : document;
    const skip = new Set([...NEVER_TEXT, ...CHROME]);
    raw = domToText(fresh.documentElement as unknown as DomNode, skip);
    if (!collapseWhitespace(raw)) raw = domToText(fresh.documentElement as unknown as DomNode);
  }
  const { text, truncated } = capText(collapseWhitespace(raw), maxChars);
  const firstHeading = clean(/^#*\s*(.{1,200})/.exec(text)?.[1]);
  return {
    title: clean(article?.title) ?? pageTitle ?? firstHeading ?? '',
    text,
    excerpt: excerptOf(clean(article?.excerpt) ?? description ?? text),
    byline: clean(article?.byline),
    siteName: clean(article?.siteName),
    truncated,
  };
}

/** Plain text, Markdown or JSON as the tool returns it: whitespace tidied, capped. */
export function plainText(body: string, maxChars: number = READABLE_TEXT_DEFAULTS.maxChars): ReadableText {
  const lines = body.replace(/\r\n?/g, '\n').split('\n').map((line) => line.trimEnd());
  const tidy = lines.join('\n').replace(/\n{3,}/g, '\n\n').trim();
  const { text, truncated } = capText(tidy, maxChars);
  const heading = /^#{1,6}\s+(.+)$/m.exec(text.slice(0, 2000))?.[1];
  return { title: clean(heading) ?? '', text, excerpt: excerptOf(text), truncated };
}
