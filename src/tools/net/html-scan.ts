/**
 * Linear-time HTML scanning without a DOM, for pages a DOM parser should not see.
 *
 * linkedom's parse time grows faster than linearly with nesting depth (0.6 s at depth 50 000,
 * 2.8 s at 100 000, 19 s at 180 000 on this project's machines), and a 2 MiB page can nest
 * 180 000 deep; and 2 MB of stray "<" took it 3.7 s. `nestingDepth` and `countChar` spot such
 * pages cheaply; `stripTags` then gives their text.
 * Both scanners are a single pass: no regular expression runs over the whole document.
 */

/** Elements that never hold children, and elements a following sibling closes implicitly:
 * neither deepens the tree in practice, so neither counts toward the depth estimate. */
const FLAT = new Set([
  'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr',
  'p', 'li', 'dt', 'dd', 'option', 'tr', 'td', 'th', 'tbody', 'thead', 'tfoot', '!doctype',
]);
const RAW_TEXT = new Set(['script', 'style', 'noscript', 'template', 'textarea', 'title', 'svg', 'iframe']);
const BREAKS = new Set(['p', 'div', 'br', 'li', 'tr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'section', 'article', 'ul', 'ol', 'table', 'blockquote', 'pre', 'hr']);

interface Tag {
  /** lower-case tag name ('' for comments and other markup) */
  name: string;
  closing: boolean;
  selfClosing: boolean;
  start: number;
  /** index just past '>' */
  end: number;
}

/** The first tag at or after `from`, or null (also when a '<' has no '>' after it). Each call
 * resumes past the previous tag's '>', so a scan over the document is linear. */
function nextTag(html: string, lower: string, from: number): Tag | null {
  const i = html.indexOf('<', from);
  if (i === -1) return null;
  if (lower.startsWith('<!--', i)) {
    const close = html.indexOf('-->', i + 4);
    return close === -1 ? null : { name: '', closing: false, selfClosing: true, start: i, end: close + 3 };
  }
  const gt = html.indexOf('>', i + 1);
  if (gt === -1) return null;
  const closing = html[i + 1] === '/';
  let j = i + (closing ? 2 : 1);
  const nameStart = j;
  while (j < gt && /[a-z0-9!:-]/.test(lower[j])) j++;
  return { name: lower.slice(nameStart, j), closing, selfClosing: html[gt - 1] === '/', start: i, end: gt + 1 };
}

/** How many times `ch` occurs in `text`, counting up to `limit`. */
export function countChar(text: string, ch: string, limit: number): number {
  let n = 0;
  for (let i = text.indexOf(ch); i !== -1 && n < limit; i = text.indexOf(ch, i + 1)) n++;
  return n;
}

/** Estimated element nesting depth, counting up to `limit` (returns as soon as it is reached). */
export function nestingDepth(html: string, limit: number): number {
  const lower = html.toLowerCase();
  let depth = 0;
  let max = 0;
  for (let tag = nextTag(html, lower, 0); tag; tag = nextTag(html, lower, tag.end)) {
    if (!tag.name || FLAT.has(tag.name) || tag.selfClosing) continue;
    depth = tag.closing ? Math.max(0, depth - 1) : depth + 1;
    if (depth > max && (max = depth) >= limit) return max;
  }
  return max;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,6});/gi, (whole, code: string) => {
    if (code[0] !== '#') return ENTITIES[code.toLowerCase()] ?? whole;
    const n = code[1] === 'x' || code[1] === 'X' ? parseInt(code.slice(2), 16) : parseInt(code.slice(1), 10);
    return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : whole;
  });
}

/** The text of an HTML document: tags dropped, scripts and styles skipped, blocks on new lines. */
export function stripTags(html: string): string {
  const lower = html.toLowerCase();
  const out: string[] = [];
  let pos = 0;
  for (let tag = nextTag(html, lower, 0); tag; tag = nextTag(html, lower, pos)) {
    out.push(decodeEntities(html.slice(pos, tag.start)));
    pos = tag.end;
    if (!tag.closing && !tag.selfClosing && RAW_TEXT.has(tag.name)) {
      // Skip the element's raw content up to its end tag (which the next round consumes).
      const close = lower.indexOf(`</${tag.name}`, tag.end);
      if (close === -1) return out.join('');
      pos = close;
      continue;
    }
    if (BREAKS.has(tag.name)) out.push('\n');
  }
  const rest = html.slice(pos);
  const lt = rest.indexOf('<'); // nextTag found no complete tag: text ends at the dangling '<'
  out.push(decodeEntities(lt === -1 ? rest : rest.slice(0, lt)));
  return out.join('');
}

/** The text of the first <title> element, if any. */
export function titleOf(html: string): string | undefined {
  const lower = html.toLowerCase();
  const open = lower.indexOf('<title');
  const gt = open === -1 ? -1 : html.indexOf('>', open);
  const close = gt === -1 ? -1 : lower.indexOf('</title', gt);
  return close === -1 ? undefined : decodeEntities(html.slice(gt + 1, close));
}
