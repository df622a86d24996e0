import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatNumber, readResults, renderBenchmarks } from '../../bench/benchmarks-doc';
import type { BenchResult } from '../../bench/report';
import { EnvironmentVariables } from '../../src/config/env.schema';
import { CONTEXT_SHARES } from '../../src/orchestration/context-budget';

/**
 * Figures in the docs come from benchmark runs, never typed. docs/BENCHMARKS.md is what
 * `npm run bench:report` renders from bench/results/*.json, and a doc that cites a figure cites
 * one a result holds:
 *   - every number on a line that links to BENCHMARKS.md is a value of some result, as rendered;
 *   - a number with a measurement unit (ms, s, %, ×, KB, MB, …) anywhere in README.md and the
 *     prose docs is a value of some result, or a configuration default or limit
 *     (src/config/env.schema.ts, or ALLOWED below with its reason).
 * docs/API.md, the wire contract with its limits, is left out of the unit check only.
 */
const ROOT = join(__dirname, '..', '..');
const UNIT_CHECKED = ['README.md', 'docs/SECURITY.md', 'docs/OPERATIONS.md', 'docs/GUARANTEES.md', 'docs/ARCHITECTURE.md'];

/** Numbers with a unit that are neither measured nor an env default: limits and constants stated in code. */
const ALLOWED: Array<{ text: string; reason: string }> = [
  { text: '15 s', reason: "the fetch tools' network deadline cap (src/tools/net/web-fetcher.ts) and the SSE keep-alive interval (KEEP_ALIVE_MS), code constants" },
];

// a number: not part of a word or a version ("p99", "v20", "recall@5", "#31"), thousands with commas
const NUMBER = /(?<![\w.@#$])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)|(?<![\w.@#$,])\d+(?:\.\d+)?/g;
/** the rest of a range ("11.8–12.7 s"): its first number has the unit of its last */
const RANGE_REST = /^\s?[–-]\s?\d+(?:,\d{3})*(?:\.\d+)?/;
const UNIT = /^\s?(turns\/s|req\/s|ops\/s|MiB|KiB|ms|KB|MB|s|%|×|x)(?![\w/])/;

export interface Violation {
  file: string;
  line: number;
  figure: string;
  why: string;
}

/** The line without what is not prose: link targets, inline code, HTML comments. */
const prose = (line: string) =>
  line
    .replace(/<!--.*?-->/g, ' ')
    .replace(/`[^`]*`/g, ' ')
    .replace(/\]\([^)]*\)/g, '] ');

const numeric = (token: string) => Number(token.replace(/,/g, ''));

/** Every value the results hold, as docs/BENCHMARKS.md renders it (figures, floors, ratios, parameters, table cells, stated targets). */
export function reportedValues(results: BenchResult[]): Set<number> {
  const out = new Set<number>();
  const addText = (text: string) => {
    for (const m of text.matchAll(NUMBER)) out.add(numeric(m[0]));
  };
  for (const r of results) {
    addText(r.description);
    for (const v of Object.values(r.parameters)) addText(Array.isArray(v) ? v.join(' ') : String(v));
    for (const f of r.figures) {
      addText(f.label);
      for (const v of [f.value, f.floor, f.ratio]) if (v != null) out.add(Number(formatNumber(v)));
    }
    for (const t of r.tables) for (const row of t.rows) row.forEach(addText);
  }
  return out;
}

/** A value with its unit as docs write it ("30 s", "256 KB"); KiB and MiB are written KB and MB. */
const withUnit = (value: number, unit: string) => `${formatNumber(value)} ${unit.replace('iB', 'B')}`;

/**
 * Env defaults in the units docs state them in (a `_MS` default in ms and s, a byte size in KB and
 * MB), and the context budget's shares in %.
 */
export function configValues(): Set<string> {
  const out = new Set<string>(Object.values(CONTEXT_SHARES).map((share) => withUnit(share * 100, '%')));
  for (const [key, v] of Object.entries(new EnvironmentVariables())) {
    if (typeof v !== 'number') continue;
    if (key.endsWith('_MS')) [withUnit(v, 'ms'), withUnit(v / 1000, 's')].forEach((x) => out.add(x));
    else if (/_BYTES$|_LENGTH$/.test(key)) [withUnit(v / 1024, 'KB'), withUnit(v / 1024 ** 2, 'MB')].forEach((x) => out.add(x));
  }
  return out;
}

/** What a set of docs cites that no result (or config default, or allowlist entry) holds. */
export function citationViolations(docs: Array<{ file: string; text: string }>, results: BenchResult[], config: Set<string>): Violation[] {
  const reported = reportedValues(results);
  const out: Violation[] = [];
  for (const { file, text } of docs) {
    const unitChecked = UNIT_CHECKED.includes(file);
    text.split('\n').forEach((raw, i) => {
      const linksBenchmarks = /BENCHMARKS\.md/.test(raw);
      const line = prose(raw);
      for (const m of line.matchAll(NUMBER)) {
        const value = numeric(m[0]);
        if (reported.has(value)) continue;
        const after = line.slice(m.index! + m[0].length);
        const unit = UNIT.exec(after.replace(RANGE_REST, ''));
        const figure = unit ? `${m[0]}${unit[0]}` : m[0];
        if (linksBenchmarks) {
          out.push({ file, line: i + 1, figure, why: 'cited beside a BENCHMARKS.md link, in no result' });
        } else if (unit && unitChecked && !config.has(withUnit(value, unit[1])) && !ALLOWED.some((a) => a.text === `${m[0]} ${unit[1]}`)) {
          out.push({ file, line: i + 1, figure: figure.trim(), why: 'a measurement in no result, not a config default' });
        }
      }
    });
  }
  return out;
}

/** Where a doc differs from the rendered file: the first differing line of each, or null. */
export function firstDifference(actual: string, rendered: string): { line: number; actual: string; rendered: string } | null {
  if (actual === rendered) return null;
  const [a, r] = [actual.split('\n'), rendered.split('\n')];
  const i = a.findIndex((l, k) => l !== r[k]);
  const line = i < 0 ? a.length : i;
  return { line: line + 1, actual: a[line] ?? '(end of file)', rendered: r[line] ?? '(end of file)' };
}

/** README.md and docs/*.md, except the generated file itself. */
function realDocs(): Array<{ file: string; text: string }> {
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'BENCHMARKS.md').map((f) => `docs/${f}`)];
  return files.map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
}

/** A result as a bench script writes it, for the cases below. */
const sample: BenchResult = {
  bench: 'load',
  description: 'N concurrent turns. Target: p99 under 100 ms.',
  date: '2026-01-02T03:04:05.000Z',
  machine: { os: 'linux', cpu: 'cpu', cores: 2, memoryBytes: 2 ** 33, node: 'v20.0.0', loadAverage: { start: 1.5, end: 2.25 } },
  commit: { sha: 'abc1234', dirty: false },
  parameters: { n: [100, 300] },
  figures: [
    { key: 'turns-per-s', label: 'turns per second', value: 44.2871, unit: 'turns/s' },
    { key: 'cpu.ms', label: 'CPU per turn', value: 16.63, unit: 'ms', floor: 3.81, ratio: 16.63 / 3.81 },
  ],
  tables: [{ id: 'memory', title: 'Idle memory', header: ['case', 'RSS MB'], rows: [['Orion', '231']] }],
};

describe('benchmark figures in the docs', () => {
  const results = readResults(ROOT);
  const config = configValues();

  it('docs/BENCHMARKS.md is what `npm run bench:report` renders from bench/results/*.json', () => {
    expect(results.length).toBeGreaterThan(0);
    expect(firstDifference(readFileSync(join(ROOT, 'docs', 'BENCHMARKS.md'), 'utf8'), renderBenchmarks(results))).toBeNull();
  });

  it('renders the same results to the same Markdown, in a fixed order, with a section per bench', () => {
    const other: BenchResult = { ...sample, bench: 'decoders', figures: [{ key: 'x', label: 'x', value: 1 / 3, unit: 'ms' }], tables: [] };
    const md = renderBenchmarks([sample, other]);
    expect(renderBenchmarks([other, sample])).toBe(md);
    expect(md).toMatch(/^# Benchmarks\n/);
    expect(md).toContain('Generated by `npm run bench:report` from bench/results/*.json. Do not edit by hand');
    expect(md.indexOf('\n## load\n')).toBeLessThan(md.indexOf('\n## decoders\n'));
    expect(md).toContain('| CPU per turn | `cpu.ms` | 16.6 ms | 3.81 ms | 4.36× |');
    expect(md).toContain('| x | `x` | 0.333 ms |\n');
    expect(md).toContain('- Commit: abc1234\n');
  });

  it('a hand edit of docs/BENCHMARKS.md is told apart from the rendered file', () => {
    const rendered = renderBenchmarks([sample]);
    const line = rendered.split('\n').findIndex((l) => l.includes('`cpu.ms`')) + 1;
    expect(firstDifference(rendered.replace('16.6 ms', '12.0 ms'), rendered)).toEqual({
      line,
      actual: '| CPU per turn | `cpu.ms` | 12.0 ms | 3.81 ms | 4.36× |',
      rendered: '| CPU per turn | `cpu.ms` | 16.6 ms | 3.81 ms | 4.36× |',
    });
    // a result changed without rendering: the committed file no longer matches
    const changed = { ...sample, figures: [{ ...sample.figures[0], value: 50 }, sample.figures[1]] };
    expect(firstDifference(rendered, renderBenchmarks([changed]))).not.toBeNull();
  });

  it('lists a typed figure and a cited figure that no result holds (injected README)', () => {
    const readme = [
      '# Orion',
      'Under load it does 43.3 turns/s ([load](docs/BENCHMARKS.md#load)), 16.6 ms of CPU a turn, 4.36× the floor.',
      'It answers in 12 ms at p99 on a laptop, starts in 11.8–12.7 s.',
      'Two instances give 987.6 turns per second, see [scale-out](docs/BENCHMARKS.md#scale-out).',
      'A tool times out after 30 s by default and fetches stop at 15 s; the body limit is 256 KB.',
      'The service idles at 231 MB, and at 290 MB after 40 turns.',
      'Released in 2026 as version 1.2 (issue #31), the answer has 3 parts.',
    ].join('\n');
    const found = citationViolations([{ file: 'README.md', text: readme }], [sample], config);
    expect(found).toEqual([
      { file: 'README.md', line: 2, figure: '43.3 turns/s', why: 'cited beside a BENCHMARKS.md link, in no result' },
      { file: 'README.md', line: 3, figure: '12 ms', why: 'a measurement in no result, not a config default' },
      { file: 'README.md', line: 3, figure: '11.8 s', why: 'a measurement in no result, not a config default' },
      { file: 'README.md', line: 3, figure: '12.7 s', why: 'a measurement in no result, not a config default' },
      { file: 'README.md', line: 4, figure: '987.6', why: 'cited beside a BENCHMARKS.md link, in no result' },
      { file: 'README.md', line: 6, figure: '290 MB', why: 'a measurement in no result, not a config default' },
    ]);
  });

  it('passes figures cited as rendered, config defaults, and unitless numbers away from a BENCHMARKS.md link', () => {
    const readme = [
      'Under load: 44.3 turns/s and 16.6 ms of CPU per turn, 4.36× the floor of 3.81 ms ([load](docs/BENCHMARKS.md#load)); N = 100 and 300.',
      'TOOL_TIMEOUT_MS defaults to 30 s, RUN_LEASE_MS to 30000 ms, LLM_MAX_LINE_LENGTH to 8 MiB; the system prompt gets 12% of the context.',
      'Idle: 231 MB. Listed in 2 tables with 5 columns.',
    ].join('\n');
    expect(citationViolations([{ file: 'README.md', text: readme }], [sample], config)).toEqual([]);
  });

  it('checks docs/API.md beside BENCHMARKS.md links only, not for units', () => {
    const api = ['A body over 300 KB is a 413.', 'Figures: [load](BENCHMARKS.md#load) 44 turns/s.'].join('\n');
    expect(citationViolations([{ file: 'docs/API.md', text: api }], [sample], config)).toEqual([
      { file: 'docs/API.md', line: 2, figure: '44 turns/s', why: 'cited beside a BENCHMARKS.md link, in no result' },
    ]);
  });

  it('README.md and docs/*.md cite no figure that no result holds', () => {
    const found = citationViolations(realDocs(), results, config);
    expect(found.map((v) => `${v.file}:${v.line}: ${v.figure} (${v.why})`)).toEqual([]);
  });

  it('every link into BENCHMARKS.md names a section the rendered file has', () => {
    const sections = new Set([...readFileSync(join(ROOT, 'docs', 'BENCHMARKS.md'), 'utf8').matchAll(/^## (\S+)$/gm)].map((m) => m[1]));
    const broken = realDocs().flatMap(({ file, text }) =>
      [...text.matchAll(/BENCHMARKS\.md#([a-z0-9-]+)/g)].filter((m) => !sections.has(m[1])).map((m) => `${file}: #${m[1]}`),
    );
    expect(broken).toEqual([]);
  });

  it('every allowlist entry still appears in a checked doc (a stale entry would hide a typed figure)', () => {
    const text = UNIT_CHECKED.filter((f) => existsSync(join(ROOT, f)))
      .map((f) => readFileSync(join(ROOT, f), 'utf8'))
      .join('\n');
    for (const a of ALLOWED) expect({ entry: a.text, inDocs: text.includes(a.text) }).toEqual({ entry: a.text, inDocs: true });
  });
});
