/**
 * Pages built to make an HTML-to-text extractor slow (deep nesting, unclosed constructs, huge
 * runs): the readable-text spec checks what comes out of them, bench/readable-text.bench.ts
 * times them. Before the guards in src/tools/net/readable-text.ts the worst took 278 s.
 */
export const HOSTILE_HTML: Array<[label: string, html: string]> = [
  ['200 000 nested divs', `<html><body>${'<div>'.repeat(200_000)}deep${'</div>'.repeat(200_000)}</body></html>`],
  ['2 MB of unclosed "<"', '<'.repeat(2_000_000)],
  ['2 MB of "<title" without ">"', '<title'.repeat(340_000)],
  ['a 2 MB run of spaces', `<p>${' '.repeat(2_000_000)}x</p>`],
  ['an unterminated comment', `<p>before</p><!--${'x'.repeat(1_000_000)}`],
  ['an unterminated script', `<p>before</p><script>${'<a '.repeat(300_000)}`],
  ['2 MB of entities', `<p>${'&lt;'.repeat(500_000)}</p>`],
  ['70 000 sibling elements', `<div>${'<i>x</i>'.repeat(70_000)}</div>`],
  ['a 2 MB attribute', `<div title="${'a'.repeat(2_000_000)}">x</div>`],
];

/** Plain text with a 2 MB run of trailing spaces on one line. */
export const HOSTILE_PLAIN_TEXT = `${' '.repeat(2_000_000)}x\n`;
