/** Source grouping of the chat page (public/assets/sources.js), loaded as CommonJS by Jest's swc transform. */
type Item = { type?: string; title?: string; url?: string; path?: string; score?: number; confidence?: string | number };
type Badge = { text: string; level: string } | null;
const sources = require('./public/assets/sources.js') as {
  groupSources: (ev: unknown) => { total: number; grouped: boolean; confidence: Badge; sections: Array<{ key: string; title: string; count: number; items: Item[] }> };
  confidenceBadge: (v: unknown) => Badge;
  formatScore: (v: unknown) => string | null;
  safeHttpUrl: (u: unknown) => string | null;
};
const { groupSources, confidenceBadge, formatScore, safeHttpUrl } = sources;

describe('groupSources', () => {
  const rag1 = { type: 'rag', title: 'Roadmap', path: 'docs/roadmap.md', score: 0.9, confidence: 'high' };
  const rag2 = { type: 'rag', title: 'README', path: 'README.md', score: 0.4, confidence: 'low' };
  const web1 = { type: 'web', title: 'Article', url: 'https://example.com/a', score: 3.5 };

  it('makes "Knowledge base" and "Web" sections with the counts of the event when a turn has both', () => {
    const g = groupSources({ data: [web1, rag1, rag2], ragCount: 2, webCount: 1, confidence: 'medium' });
    expect(g.grouped).toBe(true);
    expect(g.total).toBe(3);
    expect(g.confidence).toEqual({ text: 'Medium', level: 'medium' });
    expect(g.sections.map((s) => [s.key, s.title, s.count, s.items.map((i) => i.title)])).toEqual([
      ['rag', 'Knowledge base', 2, ['Roadmap', 'README']],
      ['web', 'Web', 1, ['Article']],
    ]);
  });

  it('counts the items when the event gives no counts, and keeps items of other types apart', () => {
    const g = groupSources({ data: [rag1, web1, { type: 'mcp', title: 'Other' }] });
    expect(g.sections.map((s) => [s.title, s.count])).toEqual([['Knowledge base', 1], ['Web', 1], ['Other', 1]]);
  });

  it('shows one "Sources" list when only one kind is there', () => {
    const g = groupSources({ data: [rag1, rag2], ragCount: 2, webCount: 0 });
    expect(g.grouped).toBe(false);
    expect(g.sections).toEqual([{ key: 'all', title: 'Sources', count: 2, items: [rag1, rag2] }]);
  });

  it('copes with missing or malformed events', () => {
    for (const ev of [null, undefined, {}, { data: 'x' }, { data: [null, 3] }]) {
      expect(groupSources(ev)).toEqual({ total: 0, grouped: false, confidence: null, sections: [] });
    }
  });
});

describe('confidence, scores and links', () => {
  it('shows the levels the server reports, and numbers in 0..1 as percentages', () => {
    expect(['high', 'Medium', 'low', 'none'].map(confidenceBadge)).toEqual([
      { text: 'High', level: 'high' },
      { text: 'Medium', level: 'medium' },
      { text: 'Low', level: 'low' },
      { text: 'None', level: 'none' },
    ]);
    expect([0.91, 0.75, 0.42, 0.18].map(confidenceBadge)).toEqual([
      { text: '91%', level: 'high' },
      { text: '75%', level: 'high' },
      { text: '42%', level: 'medium' },
      { text: '18%', level: 'low' },
    ]);
    for (const junk of [undefined, null, 'certain', 'constructor', 7.5, -0.1, NaN]) expect(confidenceBadge(junk)).toBeNull();
  });

  it('formats scores by their scale', () => {
    expect([0.9123, 3.5, 12.345, undefined, NaN].map(formatScore)).toEqual(['0.91', '3.50', '12.3', null, null]);
  });

  it('links only to http(s)', () => {
    expect(safeHttpUrl('https://example.com/a b')).toBe('https://example.com/a%20b');
    expect(safeHttpUrl('http://x.test/')).toBe('http://x.test/');
    for (const bad of ['javascript:alert(1)', 'data:text/html,x', '/relative', 'not a url', 42, null]) expect(safeHttpUrl(bad)).toBeNull();
  });
});
