import { formatNumber } from '../../bench/benchmarks-doc';
import { type BenchResult, cellFigures } from '../../bench/report';
import { type Unit, unitAt } from '../../bench/units';
import { EnvironmentVariables } from '../../src/config/env.schema';
import { CONTEXT_SHARES } from '../../src/orchestration/context-budget';

/**
 * Which numbers in a doc cite a figure no benchmark result holds.
 *   - A number with a unit ("12 ms", "3 seconds", "2 GB", "7 times", "44.3 turns/s") in a
 *     unit-checked doc must equal a reported figure of the same dimension (time, bytes, ×, %,
 *     turns/s, …) converted to the doc's unit and written as docs/BENCHMARKS.md renders numbers
 *     (3 significant digits: "16.6 ms" and "0.0166 s" cite 16.63 ms, "17 ms" does not), or be a
 *     configuration default in that dimension, or sit in an ALLOWED phrase. Small integers get no
 *     pass for appearing somewhere, nor do a bench's parameters or the targets in its description.
 *   - Any number on a line linking to BENCHMARKS.md must be reported, by the benchmark whose
 *     section the link names (by any benchmark for a link without a known section): with a unit,
 *     as above; without one, as some value its results hold (a parameter, a count in a table).
 *   - Known gap: a figure with a unit on a line without a link passes when any benchmark holds
 *     the same value in the same dimension; cite figures with a link to their section.
 */

/** Files whose every number-with-unit is checked; docs/API.md (the wire contract, with its limits) is not. */
export const UNIT_CHECKED = [
  'README.md',
  'bench/README.md',
  'docs/SECURITY.md',
  'docs/OPERATIONS.md',
  'docs/GUARANTEES.md',
  'docs/ARCHITECTURE.md',
];

/**
 * Numbers with a unit that are neither measured nor an env default: limits and constants stated in
 * code. An entry is the phrase the figure stands in, so the same number elsewhere ("under 100 ms")
 * is still checked.
 */
export const ALLOWED: Array<{ text: string; reason: string }> = [
  { text: 'after 15 s idle', reason: 'KEEP_ALIVE_MS, the SSE keep-alive interval (a code constant)' },
  { text: '--partition 20s --report storage-soak', reason: "bench:storage's recorded soak command line in bench/README.md (an input, as its parameters record)" },
  { text: '20 ms apart', reason: "GAP_MS in bench/load/fake-model.ts, the load bench model's delta spacing (an input)" },
  { text: '16 MB of shared buffers', reason: "shared_buffers=16MB, the small PGlite profile's setting in src/database/data-source.ts" },
  { text: 'one 100 ms timer', reason: 'RunEventBus.NOTIFY_INTERVAL_MS, the code constant that coalesces run-event notifications' },
  { text: 'per run per 100 ms', reason: 'RunEventBus.NOTIFY_INTERVAL_MS' },
  { text: 'per watched run per 100 ms', reason: 'RunEventBus.NOTIFY_INTERVAL_MS' },
  { text: 'or until 32 events', reason: 'RunStream.CHUNK_BATCH_SIZE, a code constant' },
  { text: 'every 300 ms, so that every stream is open', reason: 'bench/heap-per-stream.bench.ts input (the fake model slowed so every stream waits)' },
  { text: 'every 5 s, and polls', reason: 'RunEventBus.WATCH_TTL_MS / 2, how often a follower renews its watch' },
  // bench/README.md describes how each benchmark runs: its inputs are stated there, its results are not
  { text: 'quadratic (16× the input costs 256× the time), a linear one costs about 16×', reason: 'bench:decoders: what quadratic and linear growth mean for its 16 times larger input (8 MB vs 512 KB)' },
  { text: '20,000 deltas of 1 KB', reason: 'bench:slow-clients input (BENCH_DELTAS, PIECE in bench/sse-slow-clients.bench.ts)' },
  { text: '(2 s timeout, then', reason: "the query embedding's time limit in ToolIndexService.retrieve, a code constant" },
  { text: ', 180 s)', reason: "bench:load's default run timeout flag" },
  { text: 'after 2 warm-up turns and 1 s idle', reason: 'how bench:load samples idle RSS' },
  { text: 'sampled every 100 ms', reason: "bench/load/proc.ts's RSS sampling interval" },
  { text: 'read 11 s after the warm-up', reason: 'PG_STATS_WAIT_MS in bench/load.bench.ts' },
  { text: 'up to 10 s late', reason: "PostgreSQL's statistics reporting delay, the reason for PG_STATS_WAIT_MS" },
  { text: 'at 512 KB and 8 MB', reason: "bench:decoders' two input sizes" },
  { text: '16× the input costs 256× the time', reason: 'arithmetic: what a quadratic decoder would cost, not a measurement' },
];

/** Whether an ALLOWED phrase covers the number at `index` of `line`. */
function allowed(line: string, index: number): boolean {
  return ALLOWED.some((a) => {
    for (let at = line.indexOf(a.text); at >= 0; at = line.indexOf(a.text, at + 1)) if (at <= index && index < at + a.text.length) return true;
    return false;
  });
}

export interface Violation {
  file: string;
  line: number;
  figure: string;
  why: string;
}

/** Values in a dimension's base unit (ms, bytes, …), by dimension. */
export type Figures = Map<string, number[]>;

// a number: not part of a word, a name or a version ("p99", "v20", "recall@5", "#31", "Llama-3.1-8B"), thousands with commas
const NUMBER = /(?<![\w.@#$]|\w-)\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)|(?<![\w.@#$,]|\w-)\d+(?:\.\d+)?/g;
/** the rest of a range ("11.8–12.7 s"): its first number has the unit of its last */
const RANGE_REST = /^\s?[–-]\s?\d+(?:,\d{3})*(?:\.\d+)?/;

const numeric = (token: string) => Number(token.replace(/,/g, ''));

/** The line without what is not prose: link targets, inline code, HTML comments. */
const prose = (line: string) =>
  line
    .replace(/<!--.*?-->/g, ' ')
    .replace(/`[^`]*`/g, ' ')
    .replace(/\]\([^)]*\)/g, '] ');

function add(figures: Figures, value: number | null | undefined, unit: Unit | null) {
  if (value == null || !Number.isFinite(value) || !unit) return;
  const list = figures.get(unit.dimension) ?? [];
  list.push(value * unit.scale);
  figures.set(unit.dimension, list);
}

/**
 * The figures the results report, by dimension: every figure, its floor (same unit) and its
 * ratio to the floor (×), and each numeric table cell in its column's unit. Parameters and
 * descriptions are left out: what a bench ran with ("idleSeconds = 3") or aimed at ("p99 under
 * 100 ms") is no measurement, and would excuse "starts in 3 seconds".
 */
export function reportedFigures(results: BenchResult[]): Figures {
  const out: Figures = new Map();
  for (const r of results) {
    for (const f of r.figures) {
      if (f.table) continue; // read from the table below, with the column's unit
      add(out, f.value, unitAt(f.unit));
      add(out, f.floor, unitAt(f.unit));
      add(out, f.ratio, unitAt('×'));
    }
    for (const t of r.tables) {
      for (const row of t.rows) {
        row.forEach((cell, c) => t.header[c] && cellFigures(t.header[c], cell).forEach((x) => add(out, x.value, unitAt(x.unit))));
      }
    }
  }
  return out;
}

/** Every number the results hold, as rendered, with or without a unit: what a unitless number beside a link may cite. */
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

/**
 * Env defaults (a `_MS` default as a time, a `_BYTES`/`_LENGTH` default as a size) and the
 * context budget's shares in %, with the slack they leave.
 */
export function configValues(): Figures {
  const out: Figures = new Map();
  const shares = Object.values(CONTEXT_SHARES);
  for (const share of shares) add(out, share * 100, unitAt('%'));
  add(out, (1 - shares.reduce((a, b) => a + b, 0)) * 100, unitAt('%'));
  for (const [key, v] of Object.entries(new EnvironmentVariables())) {
    if (typeof v !== 'number') continue;
    if (key.endsWith('_MS')) add(out, v, unitAt('ms'));
    else if (/_BYTES$|_LENGTH$/.test(key)) add(out, v, unitAt('B'));
  }
  return out;
}

/**
 * Whether `token` in `unit` is one of `figures` as docs/BENCHMARKS.md renders numbers (3
 * significant digits, integers and values ≥ 100 to the unit): "16.6 ms" cites 16.63 ms and so
 * does "0.0166 s", "17 ms" does not (rounding further would let a small integer match most
 * values near it).
 */
function cites(figures: Figures, token: string, unit: Unit): boolean {
  const value = numeric(token);
  return (figures.get(unit.dimension) ?? []).some((base) => Number(formatNumber(base / unit.scale)) === value);
}

const LINKED = 'cited beside a BENCHMARKS.md link, in no result';

/** What a set of docs cites that no result (or config default, or allowlist entry) holds. */
export function citationViolations(docs: Array<{ file: string; text: string }>, results: BenchResult[], config: Figures): Violation[] {
  const typed = reportedFigures(results);
  const plain = reportedValues(results);
  // a line that links a section is checked against that benchmark's own results, so a figure
  // cannot pass because some other benchmark happens to hold the same number
  const bySection = new Map<string, { typed: Figures; plain: Set<number> }>();
  for (const bench of new Set(results.map((r) => r.bench))) {
    const own = results.filter((r) => r.bench === bench);
    bySection.set(bench, { typed: reportedFigures(own), plain: reportedValues(own) });
  }
  const cited = (raw: string) => {
    const sections = [...raw.matchAll(/BENCHMARKS\.md#([a-z0-9-]+)/g)].map((m) => bySection.get(m[1])).filter((x) => !!x);
    if (!sections.length) return { typed, plain };
    const t: Figures = new Map();
    for (const s of sections) for (const [d, vs] of s.typed) t.set(d, [...(t.get(d) ?? []), ...vs]);
    return { typed: t, plain: new Set(sections.flatMap((s) => [...s.plain])) };
  };
  const out: Violation[] = [];
  for (const { file, text } of docs) {
    const unitChecked = UNIT_CHECKED.includes(file);
    text.split('\n').forEach((raw, i) => {
      const linksBenchmarks = /BENCHMARKS\.md/.test(raw);
      const pool = linksBenchmarks ? cited(raw) : { typed, plain };
      const line = prose(raw);
      for (const m of line.matchAll(NUMBER)) {
        const after = line.slice(m.index! + m[0].length);
        const unit = unitAt(after.replace(RANGE_REST, ''));
        if (!unit) {
          if (linksBenchmarks && !pool.plain.has(numeric(m[0]))) out.push({ file, line: i + 1, figure: m[0], why: LINKED });
          continue;
        }
        if (cites(pool.typed, m[0], unit)) continue;
        const figure = `${m[0]} ${unit.text}`.replace(/ (?=[%×x]$)/, '');
        if (linksBenchmarks) out.push({ file, line: i + 1, figure, why: LINKED });
        else if (unitChecked && !cites(config, m[0], unit) && !allowed(line, m.index!)) {
          out.push({ file, line: i + 1, figure, why: 'a measurement in no result, not a config default' });
        }
      }
    });
  }
  return out;
}
