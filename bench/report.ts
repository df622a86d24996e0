/**
 * The result file of one benchmark run: bench/results/<name>.json, written at the end of the run.
 * Every figure a benchmark prints goes here too (key, value, unit, label; its floor and ratio to
 * the floor when it has one), with the run's date, machine, commit and parameters, so the
 * figures in docs/BENCHMARKS.md are generated from a run instead of typed. `write()` also
 * regenerates docs/BENCHMARKS.md from all result files.
 *
 *   const report = new BenchReport('decoders', 'What it measures…', { chunkBytes: 64 });
 *   report.add('sse.8mb.ms', '8 MB, SSE decoder', 12.3, 'ms', { floor: 4.1 });
 *   report.table('decoders', 'Decoders', ['decoder', '8 MB ms'], [['SSE', '12.3']]);
 *   report.write();
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { writeBenchmarksDoc } from './benchmarks-doc';
import { columnUnit } from './units';

export const REPO_ROOT = resolve(__dirname, '..');
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');

export type ParameterValue = string | number | boolean | null | Array<string | number>;

export interface Figure {
  /** stable across runs: what a doc or script refers to */
  key: string;
  label: string;
  value: number | null;
  unit: string;
  /** the same figure for the floor (the least code doing the same job), measured in the same run */
  floor?: number | null;
  /** value / floor, or the ratio the benchmark computed itself (e.g. a median of per-round ratios) */
  ratio?: number | null;
  /** set for figures read from a table cell: the table's id */
  table?: string;
}

export interface ReportTable {
  id: string;
  title: string;
  header: string[];
  /** the cells as the benchmark printed them */
  rows: string[][];
}

/** A series a benchmark sampled over time, kept so its spread can be analysed after the run: one row per sample, the columns' values in order. */
export interface ReportSeries {
  id: string;
  title: string;
  /** the first column is the time (s); the units of the others say what each is */
  columns: string[];
  unit: string;
  rows: number[][];
}

export interface BenchResult {
  bench: string;
  description: string;
  /** ISO 8601, when the run ended */
  date: string;
  machine: {
    os: string;
    cpu: string;
    cores: number;
    memoryBytes: number;
    node: string;
    /** 1-minute load average when the run started and when it ended */
    loadAverage: { start: number; end: number };
  };
  commit: { sha: string | null; dirty: boolean };
  parameters: Record<string, ParameterValue>;
  figures: Figure[];
  tables: ReportTable[];
  /** time series (absent when the bench kept none) */
  series?: ReportSeries[];
}

const UNITS = ['µs', 'ms', 's', 'KB', 'MB', 'GB', 'B', '%', '×', 'x', 'turns/s', 'req/s', 'ops/s'];

/** The commit the run measured; the benchmark outputs themselves do not make the tree dirty. */
function gitCommit(): BenchResult['commit'] {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const sha = git('rev-parse', '--short', 'HEAD');
    const changes = git('status', '--porcelain', '--', '.', ':(exclude)bench/results', ':(exclude)docs/BENCHMARKS.md');
    return { sha, dirty: changes.length > 0 };
  } catch {
    // not a git checkout (an unpacked release): the run still reports its figures
    return { sha: null, dirty: false };
  }
}

/** Read when a bench script imports this module, i.e. as its run starts: the tree and load it ran on. */
const atStart = { commit: gitCommit(), loadAverage: loadavg()[0] };

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/µ/g, 'u')
    .replace(/×/g, 'x')
    .replace(/[^a-z0-9@]+/g, '-')
    .replace(/^-|-$/g, '');

/** The unit a table header or cell ends with ("turn p50 / p99 s" → "s", "2.1×" → "×"). */
function unitOf(text: string): string {
  const t = text.trim();
  for (const u of [...UNITS].sort((a, b) => b.length - a.length)) {
    if (t.endsWith(` ${u}`) || t === u) return u;
    if ((u === '×' || u === '%') && t.endsWith(u)) return u;
  }
  return '';
}

/**
 * The numbers in one table cell with their units: a cell "12 / 40" under "p50 / p99 ms" gives
 * two figures in ms; a cell's own unit ("2.1×") wins over its column's, and a column's unit comes
 * from its header ("CPU ms/turn" → ms/turn, "CPU × floor" → ×). Also read by the figure-citation
 * test on stored results, so result files written before headers gave units still compare by unit.
 */
export function cellFigures(header: string, text: string): Array<{ head: string; value: number; unit: string }> {
  const heads = header.split(' / ');
  const parts = text.split(' / ');
  const pairs = heads.length === parts.length ? heads.map((h, i) => [h, parts[i]]) : [[header, text]];
  const columnWide = columnUnit(header)?.text ?? '';
  const out: Array<{ head: string; value: number; unit: string }> = [];
  for (const [head, cell] of pairs) {
    const m = /^[+-]?\d+(\.\d+)?/.exec(cell.replace(/,/g, ''));
    if (!m) continue;
    out.push({ head, value: Number(m[0]), unit: unitOf(cell) || columnUnit(head)?.text || columnWide });
  }
  return out;
}

export class BenchReport {
  private readonly figures: Figure[] = [];
  private readonly tables: ReportTable[] = [];
  private readonly series: ReportSeries[] = [];

  /**
   * @param name the bench's name: the result file's name and the section anchor in docs/BENCHMARKS.md
   * @param description what it measures, one or two sentences, shown in docs/BENCHMARKS.md
   * @param parameters what it ran with (N, flags, environment switches)
   */
  constructor(
    readonly name: string,
    private readonly description: string,
    readonly parameters: Record<string, ParameterValue>,
  ) {}

  /** One printed figure; `compare.floor` is the floor's value, the ratio is value / floor unless given. */
  add(key: string, label: string, value: number | null, unit: string, compare?: { floor?: number | null; ratio?: number | null }): this {
    if (this.figures.some((f) => f.key === key)) throw new Error(`${this.name}: figure ${key} added twice`);
    const figure: Figure = { key, label, value: finite(value), unit };
    if (compare) {
      figure.floor = finite(compare.floor ?? null);
      // a floor at or below zero (an RSS that shrank) has no meaningful ratio
      figure.ratio = finite(compare.ratio ?? (value != null && compare.floor != null && compare.floor > 0 ? value / compare.floor : null));
    }
    this.figures.push(figure);
    return this;
  }

  /**
   * A printed table, kept as printed, and each numeric cell as a figure keyed
   * `<id>.<first keyColumns cells>.<column>`; a cell "12 / 40" under "p50 / p99 ms" gives two.
   */
  table(id: string, title: string, header: string[], rows: Array<Array<string | number>>, keyColumns = 1): this {
    const cells = rows.map((r) => r.map((c) => String(c).trim()));
    this.tables.push({ id, title, header, rows: cells });
    for (const row of cells) {
      const rowKey = row.slice(0, keyColumns).map(slug).join('.');
      const rowLabel = row.slice(0, keyColumns).join(' · ');
      for (let c = keyColumns; c < row.length && c < header.length; c++) {
        for (const { head, value, unit } of cellFigures(header[c], row[c])) {
          const key = `${id}.${rowKey}.${slug(head)}`;
          if (this.figures.some((f) => f.key === key)) continue;
          this.figures.push({ key, label: `${rowLabel}: ${head}`, value, unit, table: id });
        }
      }
    }
    return this;
  }

  /** A time series, written to the result file as given (thin it first: the file stays small). */
  addSeries(id: string, title: string, columns: string[], unit: string, rows: number[][]): this {
    if (this.series.some((x) => x.id === id)) throw new Error(`${this.name}: series ${id} added twice`);
    this.series.push({ id, title, columns, unit, rows });
    return this;
  }

  result(): BenchResult {
    return {
      bench: this.name,
      description: this.description,
      date: new Date().toISOString(),
      machine: {
        os: `${platform()} ${release()} ${arch()}`,
        cpu: cpus()[0]?.model.trim() ?? 'unknown',
        cores: cpus().length,
        memoryBytes: totalmem(),
        node: process.version,
        loadAverage: { start: round2(atStart.loadAverage), end: round2(loadavg()[0]) },
      },
      commit: atStart.commit,
      parameters: this.parameters,
      figures: this.figures,
      tables: this.tables,
      ...(this.series.length > 0 ? { series: this.series } : {}),
    };
  }

  /** Writes bench/results/<name>.json and regenerates docs/BENCHMARKS.md; returns the file's path. */
  write(): string {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `${this.name}.json`);
    writeFileSync(file, `${JSON.stringify(this.result(), null, 2)}\n`);
    writeBenchmarksDoc(REPO_ROOT);
    console.log(`\nresults: bench/results/${this.name}.json (docs/BENCHMARKS.md regenerated)`);
    return file;
  }
}

const finite = (v: number | null | undefined) => (v == null || !Number.isFinite(v) ? null : v);
const round2 = (v: number) => Math.round(v * 100) / 100;
