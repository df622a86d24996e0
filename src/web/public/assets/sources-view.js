// Draws a turn's sources as cards with their confidence, in "Knowledge base" and "Web"
// sections (with counts) when the turn has both, under a line with the retrieval's numbers;
// web cards say whether the page was fetched. Grouping and statuses: sources.js.

import { el } from './dom.js';
import { confidenceBadge, fetchLabel, formatScore, groupSources, retrievalSummary, safeHttpUrl, withFetchStatus } from './sources.js';
import { outcomeLabel } from './turn-state.js';

/**
 * The sources section of a turn; null when there is nothing to show (a tool-free turn still
 * gets an empty `sources` event).
 * @param {Record<string, any>} ev the `sources` event's data
 * @param {Parameters<typeof withFetchStatus>[1]} [tools] the turn's tool activity (fetch statuses)
 */
export function renderSources(ev, tools = []) {
  const shown = withFetchStatus(ev, tools);
  const g = groupSources(shown);
  const retrieval = retrievalSummary(ev);
  if (g.total === 0 && !retrieval) return null;
  // `none` is no confidence at all: no badge says "None confidence"
  const overall = g.confidence?.level === 'none' ? null : g.confidence;
  // pages that failed to load are shown, but they are not sources of the answer
  const cited = shown.data.filter((x) => x.fetch?.state !== 'failed' || (Array.isArray(ev?.data) && ev.data.some((d) => d?.url === x.url))).length;
  return el('section', { class: 'sources', 'aria-label': 'Sources' }, [
    el('h3', { class: 'sources-heading' }, [
      `Sources (${cited})`,
      overall ? el('span', { class: `confidence ${overall.level}`, title: 'Confidence of the answer\'s retrieval' }, `${overall.text} confidence`) : null,
    ]),
    retrieval ? retrievalLine(retrieval) : null,
    ...g.sections.map((section) =>
      el('div', { class: `source-section ${section.key}`, 'data-section': section.key }, [
        g.grouped ? el('h4', { class: 'source-section-heading' }, `${section.title} (${section.count})`) : null,
        el('ul', { class: 'source-cards' }, section.items.map(sourceCard)),
      ]),
    ),
  ]);
}

/** "Knowledge base: 5 returned (of 12) · 2 used · Medium confidence". @param {NonNullable<ReturnType<typeof retrievalSummary>>} r */
function retrievalLine(r) {
  const metric = (name, value, title) => el('span', { class: 'retrieval-metric', 'data-metric': name, title }, value);
  return el('p', { class: 'retrieval-metrics', 'aria-label': 'Retrieval metrics' }, [
    el('span', { class: 'retrieval-label' }, r.calls > 1 ? `Knowledge base (${r.calls} searches):` : 'Knowledge base:'),
    metric('returned', `${r.returned ?? '?'} returned${r.candidates !== null ? ` (of ${r.candidates})` : ''}`, 'Results the last retrieval returned, of the candidates it considered'),
    metric('used', `${r.used} used`, 'Knowledge-base sources the answer cites'),
    r.confidence ? metric('confidence', r.confidence.level === 'none' ? 'nothing relevant found' : `${r.confidence.text} confidence`, 'Confidence of the retrieval') : null,
  ]);
}

/** @param {import('./sources.js').SourceItem & { fetch?: import('./sources.js').FetchStatus }} item */
function sourceCard(item) {
  const url = safeHttpUrl(item.url);
  const title = item.title || item.path || url || 'Untitled source';
  const conf = confidenceBadge(item.confidence);
  const score = formatScore(item.score);
  const where = item.path || (url ? new URL(url).host : '');
  const fetched = fetchLabel(item.fetch, outcomeLabel);
  return el('li', { class: `source-card ${item.type ?? ''}${item.fetch?.state === 'failed' ? ' fetch-failed' : ''}` }, [
    el('div', { class: 'source-top' }, [
      url ? el('a', { class: 'source-title', href: url, target: '_blank', rel: 'noopener noreferrer nofollow' }, title) : el('span', { class: 'source-title' }, title),
      conf && conf.level !== 'none' ? el('span', { class: `confidence ${conf.level}`, title: 'Confidence' }, conf.text) : null,
    ]),
    where || score ? el('div', { class: 'source-meta' }, [where ? el('span', { class: 'source-where' }, where) : null, score ? el('span', { class: 'source-score', title: 'Retrieval score' }, `score ${score}`) : null]) : null,
    fetched ? el('span', { class: `fetch-status ${item.fetch?.state}`, 'data-fetch': item.fetch?.state }, fetched) : null,
    item.snippet ? el('p', { class: 'source-snippet' }, item.snippet) : null,
  ]);
}
