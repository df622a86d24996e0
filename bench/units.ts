/**
 * The units figures are written in, in result files and in the docs, and what each measures:
 * a dimension ("time", "bytes", "turns/s", …) and the factor to that dimension's base unit
 * (ms, bytes), so "0.5 s" and "500 ms" compare equal and "7 times" compares with "7×".
 * Sizes follow the repository's usage: KB and MB are 1024-based, like KiB and MiB.
 */
export interface Unit {
  /** as written */
  text: string;
  /** what it measures; two figures compare only within one dimension */
  dimension: string;
  /** multiply a value by this to get the dimension's base unit */
  scale: number;
}

const TIME: Record<string, number> = {
  µs: 0.001,
  us: 0.001,
  ms: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  seconds: 1000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
};
const BYTES: Record<string, number> = { B: 1, KB: 1024, KiB: 1024, MB: 1024 ** 2, MiB: 1024 ** 2, GB: 1024 ** 3, GiB: 1024 ** 3 };
const COUNTS: Record<string, string> = { turn: 'turns', turns: 'turns', req: 'requests', request: 'requests', requests: 'requests', op: 'ops', ops: 'ops' };

const alt = (words: string[]) => [...words].sort((a, b) => b.length - a.length).join('|');
const SIZE = alt(Object.keys(BYTES));
const DURATION = alt(Object.keys(TIME));
/** what a per-turn figure counts: "rows/turn", "statements/turn", "write syscalls/turn" */
const THINGS = '[a-z]+';

/**
 * A unit at the start of `text`, whole words only. Longest forms first: "ms/turn" before "ms",
 * "requests per second" before "requests", "MB/s" before "MB".
 */
const UNIT = new RegExp(
  '^(?:' +
    [
      `(?<rate>turns?|req|requests?|ops?|${SIZE})\\s?(?:/\\s?s|per\\s(?:second|s))`,
      `(?<perTurnSize>${SIZE}|${DURATION})\\s?(?:/|per\\s)(?:turn|stmt|statement|row|open\\sstream)`,
      `(?<perTurnCount>${THINGS})\\s?/\\s?turn`,
      '(?<percent>%|per\\scent|percent)',
      '(?<ratio>×|x|times)',
      `(?<size>${SIZE})`,
      `(?<duration>${DURATION})`,
    ].join('|') +
    ')(?![\\w/@])',
);

/** The unit `text` starts with (after at most one space), or null. */
export function unitAt(text: string): Unit | null {
  const m = UNIT.exec(text.replace(/^ /, ''));
  if (!m?.groups) return null;
  const g = m.groups;
  const written = m[0];
  if (g.rate) {
    const what = g.rate;
    if (what in BYTES) return { text: written, dimension: 'bytes/s', scale: BYTES[what] };
    return { text: written, dimension: `${COUNTS[what]}/s`, scale: 1 };
  }
  // a time or size per turn (or per statement, per row) compares with the same figure stated plainly
  // ("CPU ms/turn" in a table, "16.6 ms of CPU a turn" in prose)
  if (g.perTurnSize) {
    const per = g.perTurnSize;
    return per in BYTES ? { text: written, dimension: 'bytes', scale: BYTES[per] } : { text: written, dimension: 'time', scale: TIME[per] };
  }
  if (g.perTurnCount) {
    // "turns/turn" is no unit; a count per turn is its own dimension
    if (g.perTurnCount === 'turns') return null;
    return { text: written, dimension: `${g.perTurnCount}/turn`, scale: 1 };
  }
  if (g.percent) return { text: written, dimension: '%', scale: 1 };
  if (g.ratio) return { text: written, dimension: '×', scale: 1 };
  if (g.size) return { text: written, dimension: 'bytes', scale: BYTES[g.size] };
  return { text: written, dimension: 'time', scale: TIME[g.duration] };
}

/**
 * The unit a table column's values are in, from its header: the last unit the header names,
 * ignoring parenthesised notes ("turn p50 / p99 s" → s, "CPU × floor" → ×, "Orion CPU ms/turn
 * (all instances)" → ms/turn, "KB per open stream" → KB per open stream); null for counts ("N").
 */
export function columnUnit(header: string): Unit | null {
  const text = header.replace(/\([^)]*\)/g, ' ');
  let found: Unit | null = null;
  for (let i = 0; i < text.length; i++) {
    if (i > 0 && /[\w@/]/.test(text[i - 1])) continue;
    const u = unitAt(text.slice(i));
    if (u && u.text.trim() !== 'x') {
      found = u;
      i += u.text.length - 1;
    }
  }
  return found;
}
