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

/**
 * The retrieval behind a turn's answer, from its `sources` event: how many knowledge-base
 * results the retrieval returned (`metrics.returned`, of `metrics.candidates` considered), how
 * many the answer used (the knowledge-base sources it cites, `ragCount`), and the confidence.
 * Null for a turn whose retrieval never ran (no `metrics`).
 * @param {Record<string, any> | null | undefined} ev
 * @returns {{ returned: number | null, used: number, candidates: number | null, confidence: ReturnType<typeof confidenceBadge>, calls: number } | null}
 */
export function retrievalSummary(ev) {
  const m = ev?.metrics;
  if (!m || typeof m !== 'object') return null;
  const items = Array.isArray(ev?.data) ? ev.data : [];
  return {
    returned: wholeNumber(m.returned),
    used: count(ev?.ragCount, items.filter((x) => x?.type === 'rag').length),
    candidates: wholeNumber(m.candidates),
    confidence: confidenceBadge(ev?.confidence),
    calls: wholeNumber(m.ragCalls) ?? 1,
  };
}

/**
 * @typedef {{ state: 'fetched' | 'failed' | 'fetching' | 'not_fetched', outcome?: string }} FetchStatus
 */

const FETCH_TOOLS = new Set(['fetch_page', 'fetch_pages_batch']);

/**
 * The fetch status of every URL the turn's fetch tools were asked for, from their progress
 * events (`params.url` / `params.urls`, the action and the outcome). A batch reports per page
 * only through its sources: a page of a finished batch is fetched when a source has its URL,
 * otherwise it failed.
 * @param {Array<{ name: string, status: string, isError: boolean, outcome?: string, params?: any }>} tools
 * @param {Set<string>} sourceUrls
 * @returns {Map<string, FetchStatus>}
 */
export function fetchStatuses(tools, sourceUrls) {
  /** @type {Map<string, FetchStatus>} */
  const out = new Map();
  for (const t of Array.isArray(tools) ? tools : []) {
    if (!FETCH_TOOLS.has(t.name) || t.status === 'refused') continue; // a refused duplicate: the earlier call tells
    const urls = t.name === 'fetch_page' ? [t.params?.url] : Array.isArray(t.params?.urls) ? t.params.urls : [];
    for (const url of urls) {
      if (typeof url !== 'string') continue;
      /** @type {FetchStatus} */
      let status;
      if (t.status === 'calling' || t.status === 'requested') status = { state: 'fetching' };
      else if (t.status === 'failed' || t.isError) status = { state: 'failed', outcome: t.outcome };
      else if (t.name === 'fetch_page' || sourceUrls.has(url)) status = { state: 'fetched' };
      else status = { state: 'failed' };
      // a later successful fetch of the same URL wins over an earlier failure
      if (out.get(url)?.state !== 'fetched') out.set(url, status);
    }
  }
  return out;
}

/**
 * The `sources` event with each web source's fetch status (`fetch`), plus a card for every page
 * a fetch tool failed to get (those are never cited, so the event does not list them).
 * @param {Record<string, any> | null | undefined} ev
 * @param {Parameters<typeof fetchStatuses>[0]} tools
 */
export function withFetchStatus(ev, tools) {
  const items = Array.isArray(ev?.data) ? ev.data.filter((x) => x && typeof x === 'object') : [];
  const urls = new Set(items.map((x) => x.url).filter((u) => typeof u === 'string'));
  const statuses = fetchStatuses(tools, urls);
  const data = items.map((x) => (x.type === 'web' ? { ...x, fetch: statuses.get(x.url) ?? { state: 'not_fetched' } } : x));
  const failed = [...statuses].filter(([url, st]) => st.state === 'failed' && !urls.has(url));
  for (const [url, st] of failed) data.push({ type: 'web', title: hostOf(url), url, fetch: st });
  const webCount = failed.length && typeof ev?.webCount === 'number' ? ev.webCount + failed.length : ev?.webCount;
  return { ...(ev ?? {}), data, webCount };
}

/** @type {Record<FetchStatus['state'], string>} */
const FETCH_LABELS = { fetched: 'Fetched', failed: 'Fetch failed', fetching: 'Fetching…', not_fetched: 'Search result, not fetched' };

/** @param {FetchStatus | undefined} st @param {(outcome: string | undefined) => string} outcomeLabel */
export function fetchLabel(st, outcomeLabel) {
  if (!st) return null;
  return st.state === 'failed' && st.outcome ? `${FETCH_LABELS.failed}: ${outcomeLabel(st.outcome)}` : FETCH_LABELS[st.state];
}

/** @param {string} url */
function hostOf(url) {
  try {
    return new URL(url).host || url;
  } catch {
    return url;
  }
}

/** @param {unknown} x */
function wholeNumber(x) {
  return typeof x === 'number' && Number.isInteger(x) && x >= 0 ? x : null;
}
