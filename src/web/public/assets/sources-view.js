// Draws a turn's sources as cards with their confidence, in "Knowledge base" and "Web"
// sections (with counts) when the turn has both. Grouping rules: sources.js.

import { el } from './dom.js';
import { confidenceBadge, formatScore, groupSources, safeHttpUrl } from './sources.js';

/**
 * The sources section of a turn; null when there is nothing to cite (a tool-free turn still
 * gets an empty `sources` event).
 * @param {Record<string, any>} ev the `sources` event's data
 */
export function renderSources(ev) {
  const g = groupSources(ev);
  if (g.total === 0) return null;
  const overall = g.confidence;
  return el('section', { class: 'sources', 'aria-label': 'Sources' }, [
    el('h3', { class: 'sources-heading' }, [
      `Sources (${g.total})`,
      overall ? el('span', { class: `confidence ${overall.level}`, title: 'Confidence of the answer\'s retrieval' }, `${overall.text} confidence`) : null,
    ]),
    ...g.sections.map((section) =>
      el('div', { class: `source-section ${section.key}`, 'data-section': section.key }, [
        g.grouped ? el('h4', { class: 'source-section-heading' }, `${section.title} (${section.count})`) : null,
        el('ul', { class: 'source-cards' }, section.items.map(sourceCard)),
      ]),
    ),
  ]);
}

/** @param {import('./sources.js').SourceItem} item */
function sourceCard(item) {
  const url = safeHttpUrl(item.url);
  const title = item.title || item.path || url || 'Untitled source';
  const conf = confidenceBadge(item.confidence);
  const score = formatScore(item.score);
  const where = item.path || (url ? new URL(url).host : '');
  return el('li', { class: `source-card ${item.type ?? ''}` }, [
    el('div', { class: 'source-top' }, [
      url ? el('a', { class: 'source-title', href: url, target: '_blank', rel: 'noopener noreferrer nofollow' }, title) : el('span', { class: 'source-title' }, title),
      conf ? el('span', { class: `confidence ${conf.level}`, title: 'Confidence' }, conf.text) : null,
    ]),
    where || score ? el('div', { class: 'source-meta' }, [where ? el('span', { class: 'source-where' }, where) : null, score ? el('span', { class: 'source-score', title: 'Retrieval score' }, `score ${score}`) : null]) : null,
    item.snippet ? el('p', { class: 'source-snippet' }, item.snippet) : null,
  ]);
}
