/**
 * npm run bench:readable-text
 *
 * How long the page-to-text extraction (src/tools/net/readable-text.ts) takes on pages built to
 * make it slow (test/support/hostile-html.ts): the fastest of 3 runs per page. Each takes well
 * under a second on a quiet machine; before the guards the worst took 278 s. Was a timed
 * assertion in the readable-text spec; figures belong here.
 */
import { extractReadableText, plainText } from '../src/tools/net/readable-text';
import { HOSTILE_HTML, HOSTILE_PLAIN_TEXT } from '../test/support/hostile-html';

function fastestMs(run: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    run();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return best;
}

const rows: Array<[string, number]> = [
  ...HOSTILE_HTML.map(([label, html]): [string, number] => [label, fastestMs(() => extractReadableText(html))]),
  ['plain text: a 2 MB run of trailing spaces', fastestMs(() => plainText(HOSTILE_PLAIN_TEXT))],
];
const width = Math.max(...rows.map(([l]) => l.length));
console.log(`readable-text on hostile pages (fastest of 3, Node ${process.version})`);
for (const [label, ms] of rows) console.log(`  ${label.padEnd(width)}  ${ms.toFixed(1).padStart(8)} ms`);
