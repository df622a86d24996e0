// How the chat page shows a turn's `sources` event: cards grouped into "Knowledge base" and
// "Web" (with counts) when a turn has both kinds, one "Sources" list otherwise. Pure: no DOM.

/**
 * @typedef {{ type?: string, title?: string, url?: string, path?: string, snippet?: string,
 *             score?: number, confidence?: string | number }} SourceItem
 * @typedef {{ data?: SourceItem[], ragCount?: number, webCount?: number, confidence?: string | number }} SourcesEvent
 * @typedef {{ key: string, title: string, count: number, items: SourceItem[] }} SourceSection
 */

const SECTION_TITLES = { rag: 'Knowledge base', web: 'Web', other: 'Other' };

/**
 * Groups the items of a `sources` event. Counts come from the event (`ragCount`, `webCount`)
 * when it gives them, else from the items.
 * @param {SourcesEvent | null | undefined} ev
 * @returns {{ total: number, grouped: boolean, confidence: ReturnType<typeof confidenceBadge>, sections: SourceSection[] }}
 */
export function groupSources(ev) {
  const items = Array.isArray(ev?.data) ? ev.data.filter((x) => x && typeof x === 'object') : [];
  const rag = items.filter((x) => x.type === 'rag');
  const web = items.filter((x) => x.type === 'web');
  const other = items.filter((x) => x.type !== 'rag' && x.type !== 'web');
  const confidence = confidenceBadge(ev?.confidence);
  const grouped = rag.length > 0 && web.length > 0;
  if (!grouped) {
    return { total: items.length, grouped, confidence, sections: items.length ? [{ key: 'all', title: 'Sources', count: items.length, items }] : [] };
  }
  const sections = [
    { key: 'rag', title: SECTION_TITLES.rag, count: count(ev?.ragCount, rag.length), items: rag },
    { key: 'web', title: SECTION_TITLES.web, count: count(ev?.webCount, web.length), items: web },
  ];
  if (other.length) sections.push({ key: 'other', title: SECTION_TITLES.other, count: other.length, items: other });
  return { total: items.length, grouped, confidence, sections };
}

const LEVELS = { high: 'High', medium: 'Medium', low: 'Low', none: 'None' };

/**
 * A confidence as a badge. The server reports levels (`high`, `medium`, `low`, and `none` for
 * a turn whose retrieval found nothing); a number in 0..1 is shown as a percentage with the
 * level it falls in (high ≥ 0.75, medium ≥ 0.4). Anything else: no badge.
 * @param {unknown} value
 * @returns {{ text: string, level: 'high' | 'medium' | 'low' | 'none' } | null}
 */
export function confidenceBadge(value) {
  if (typeof value === 'string') {
    const level = value.toLowerCase();
    return Object.hasOwn(LEVELS, level) ? { text: LEVELS[/** @type {keyof typeof LEVELS} */ (level)], level: /** @type {any} */ (level) } : null;
  }
  const x = unit(value);
  if (x === null) return null;
  return { text: `${Math.round(x * 100)}%`, level: x >= 0.75 ? 'high' : x >= 0.4 ? 'medium' : 'low' };
}

/**
 * A retrieval score for display: two decimals below 10 (normalized or cosine scores), one above
 * (raw BM25-style scores); null when there is none.
 * @param {unknown} score
 */
export function formatScore(score) {
  if (typeof score !== 'number' || !Number.isFinite(score)) return null;
  return Math.abs(score) < 10 ? score.toFixed(2) : score.toFixed(1);
}

/**
 * The URL if it is http(s), else null: a source link must never be `javascript:` or `data:`.
 * @param {unknown} url
 * @returns {string | null}
 */
export function safeHttpUrl(url) {
  if (typeof url !== 'string') return null;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

/** @param {unknown} x */
function unit(x) {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0 && x <= 1 ? x : null;
}

/** @param {unknown} given @param {number} fallback */
function count(given, fallback) {
  return typeof given === 'number' && Number.isInteger(given) && given >= 0 ? given : fallback;
}
