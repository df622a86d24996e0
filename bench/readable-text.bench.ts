/**
 * npm run bench:readable-text
 *
 * How long the page-to-text extraction (src/tools/net/readable-text.ts) takes on pages built to
 * make it slow (test/support/hostile-html.ts): the fastest of 3 runs per page. Was a timed
 * assertion in the readable-text spec; figures belong here. No floor: the natural one, the same
 * pages through linkedom and Readability without Orion's work caps, runs for minutes on the
 * worst of them (that is what the caps are for), so it would measure the hazard, not a
 * least-code baseline.
 */
import { extractReadableText, plainText } from '../src/tools/net/readable-text';
import { HOSTILE_HTML, HOSTILE_PLAIN_TEXT } from '../test/support/hostile-html';
import { BenchReport } from './report';

const RUNS = 3;

function fastestMs(run: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < RUNS; i++) {
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
console.log(`readable-text on hostile pages (fastest of ${RUNS}, Node ${process.version})`);
for (const [label, ms] of rows) console.log(`  ${label.padEnd(width)}  ${ms.toFixed(1).padStart(8)} ms`);

const report = new BenchReport(
  'readable-text',
  'Page-to-text extraction (extractReadableText, plainText) on pages built to make it slow: deep nesting, unclosed ' +
    'constructs, huge runs of one character. The fastest of 3 runs per page. No floor: the same pages through linkedom ' +
    'and Readability without Orion\'s work caps run for minutes on the worst of them, which is the hazard the caps remove.',
  { pages: rows.length, runsPerPage: RUNS, statistic: `fastest of ${RUNS}` },
);
report.table(
  'pages',
  'Extraction time per hostile page',
  ['page', 'ms'],
  rows.map(([label, ms]) => [label, `${ms.toFixed(1)} ms`]),
);
report.write();
