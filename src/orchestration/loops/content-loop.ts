/**
 * The content-loop detector: finds a passage that the model repeats back to back ("degenerate
 * repetition") while the text streams, so the caller can stop the upstream request before the
 * rest of the loop reaches the client.
 *
 * A loop is `needed(p) = max(R, ceil(S / p))` complete copies, back to back, of a passage of
 * period p (R, S: `repeats`/`minSpan` in prose, `codeRepeats`/`codeMinSpan` inside a fenced code
 * block or on a markdown table line). The span S makes short units ("ha", "the ") need more
 * copies than sentences. A passage with no letter or digit (`\p{L}`, `\p{N}`) never counts:
 * whitespace runs, rules (`-----`), table separators, ellipses, emoji.
 *
 * Cost: bounded memory (one array of 16-bit entries: a table of recent 8-grams, 2 × maxPeriod
 * slots, and a ring of the last characters, which starts at 256 and doubles up to 8 × maxPeriod;
 * at most 8 candidate periods) and O(1) amortised work per character, whatever the delta sizes:
 *
 * - every character goes into the ring and into a shift-xor hash of the last 8 characters (no
 *   character has to be taken out: older ones shift past the 32 bits);
 * - every 4th position (i ≡ 0 mod 4) enters its 8-gram into the table and reads where that
 *   8-gram was entered last. In a stretch of period p the answer is d = lcm(p, 4), so the period
 *   is d, d/2 or d/4: each is verified backwards once (bounded by the ring), the smallest whose
 *   repetition covers the same stretch becomes a candidate, its run starting where the
 *   repetition really starts. Only a quarter of the positions touch the table, so it holds
 *   fewer entries to collide (a unit whose period divides 4 writes a single one);
 * - each candidate keeps a run of consecutive positions where s[i] = s[i − p]; it is dropped
 *   when the run breaks and fires when the run reaches (needed(p) − 1) × p.
 *
 * Everything depends on positions in the text only, so splitting the same text into other
 * deltas gives the same result. A period is found once its stretch is lcm(p, 4) + 11 ≤ 4p + 11
 * characters long (later only if a table collision hides an entry), so it fires on time
 * whenever needed(p) × p ≥ 4p + 11: with the defaults, always.
 *
 * A detector allocates its array when it is made; `release()` (when the response is over) gives
 * it to a small pool for the next one, which saves the allocation (it costs about as much as
 * scanning a short answer). Measured by `npm run bench:loops` (bench/README.md).
 *
 * Known limits: copies that differ (whitespace, a changing number, a typo) are not one passage;
 * such a loop is caught only once it settles into exact copies. Positions are UTF-16 units; an
 * emoji is two units (and a symbol: a run of emoji never counts).
 */

export interface ContentLoopSettings {
  /**
   * copies of one passage, back to back, that reach the client at most in prose
   * (LOOP_CONTENT_REPEATS): further copies are held back while the repetition lasts; 0 turns
   * detection off
   */
  repeats: number;
  /** the least span (chars) the shown copies cover in prose, so that short units ("ha", "the ") show more copies */
  minSpan: number;
  /** inside fenced code blocks and markdown table lines (lines starting with `|`): the same two, stricter */
  codeRepeats: number;
  codeMinSpan: number;
  /**
   * a repetition is a loop once it runs this many times the shown copies (and span): until then
   * the held copies are released as soon as the repetition ends, so real repetitive work (ten
   * identical log lines, a list of the same item, a line the user asked for ten times) streams
   * whole, only later
   */
  fireFactor: number;
  /** the longest period looked for (bounds memory): e.g. 1024 */
  maxPeriod: number;
}

/**
 * Tuned on the loop corpus (test/fixtures/loops, `npm run bench:loops`; bench/README.md says
 * why): no false positive on its legitimate samples, every loop caught, and a repeated sentence
 * of 12 characters or more reaches the client at most 10 times.
 */
export const DEFAULT_CONTENT_LOOP: ContentLoopSettings = Object.freeze({
  repeats: 8,
  minSpan: 120,
  codeRepeats: 6,
  codeMinSpan: 1600,
  fireFactor: 4,
  maxPeriod: 1024,
});

export interface ContentLoop {
  kind: 'content';
  /** length in chars (UTF-16 units) of the repeated passage */
  period: number;
  /** complete back-to-back copies seen when it fired, the first included */
  repeats: number;
  /** offset in the text fed so far where the first copy starts */
  atChar: number;
  /** offset just past the character that fired */
  endChar: number;
  /** offset just past the copies that may be shown (see `holdFrom`): text from here on must not be streamed */
  shownEnd: number;
}

/** candidate periods followed at once */
const SLOTS = 8;
/** the q of the q-gram hash: a new period needs this many matching characters */
const Q = 8;
/** the ring's first size (characters): a short answer allocates little */
const FIRST_RING = 256;
const EMPTY = new Uint16Array(0);
/** the longest period supported: the table holds positions modulo 2^16, and d ≤ 4 × maxPeriod */
const MAX_PERIOD = 8192;

/** BMP code unit → 1 letter or digit, 2 neither, 0 not classified yet (shared, filled lazily). */
const CLASS = new Uint8Array(65536);
const ALNUM = /[\p{L}\p{N}]/u;

function alnumUnit(c: number): boolean {
  let k = CLASS[c];
  if (k === 0) {
    // a lone surrogate is no letter; pairs are judged whole by the caller
    k = c >= 0xd800 && c <= 0xdfff ? 2 : ALNUM.test(String.fromCharCode(c)) ? 1 : 2;
    CLASS[c] = k;
  }
  return k === 1;
}

/**
 * Table and ring of one detector, in one array: the table in [0, T), the ring in [T, T + size).
 * A typed array is a separate allocation that costs about as much as scanning a short answer,
 * so `release()` hands the array to a small pool that the next detector takes it from (the
 * table zeroed; the ring's old content is never read: every position read was written first).
 */
const POOL = new Map<number, Uint16Array[]>();
/** arrays kept per length (20 KB at most each with the default maxPeriod; six lengths: about 1 MB at worst) */
const POOL_PER_SIZE = 16;

function takeArray(length: number, table: number): Uint16Array {
  const reused = POOL.get(length)?.pop();
  return reused ? reused.fill(0, 0, table) : new Uint16Array(length);
}

function giveArray(a: Uint16Array): void {
  let list = POOL.get(a.length);
  if (!list) POOL.set(a.length, (list = []));
  if (list.length < POOL_PER_SIZE) list.push(a);
}

/** Copies of a passage of period p that make a loop: at least two, whatever the settings. */
export function needed(repeats: number, minSpan: number, p: number): number {
  return Math.max(2, repeats, Math.ceil(minSpan / p));
}

export class ContentLoopDetector {
  private readonly settings: ContentLoopSettings;
  private readonly maxPeriod: number;
  /** the ring's final size: 8 × maxPeriod rounded up to a power of two */
  private readonly fullSize: number;
  /** table slots: 2 × maxPeriod rounded up (a quarter of the positions of 4 × maxPeriod enter it: half full at most) */
  private readonly table: number;
  /** periods are looked for up to this distance: lcm(p, 4) ≤ 4p */
  private readonly maxDistance: number;
  /**
   * [0, table): 8-gram hash → 1 + the last position ≡ 0 mod 4 where it ended, modulo 2^16 (16
   * bits keep everything small enough for the L1 cache; a wrong distance fails verification).
   * [table, table + mask + 1): the last `mask + 1` characters fed, by position & mask; the ring
   * starts small and doubles before a delta would fill it (positions stay where they are), so a
   * short answer costs little. Empty once released.
   */
  private buf: Uint16Array;
  private mask: number;
  // candidates: period, run, the run that fires in prose / in code / the lower of the two, 1 if the unit has no letter or digit
  private readonly candPeriod = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candRun = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candProse = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candCode = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candMin = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candInert = [0, 0, 0, 0, 0, 0, 0, 0];
  // the runs from which text is held back in prose / in code, and 1 once the unit is known to have a letter or digit
  private readonly candHoldProse = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candHoldCode = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candAlnum = [0, 0, 0, 0, 0, 0, 0, 0];
  private count = 0;
  private hash = 0;
  private fed = 0;
  // markdown context: where the current line starts, whether a fence is open (and with which
  // character), whether the newline that ended the last line was in code, whether the current
  // line is a table line (-1: not known yet)
  private lineStart = 0;
  private fence = false;
  private fenceChar = 0;
  private endedCode = false;
  private lineTable = -1;
  private found: ContentLoop | null = null;
  /** copies of a repetition that may be shown, in place of the settings' (a call after a loop shows one) */
  shown?: number;

  constructor(settings: ContentLoopSettings = DEFAULT_CONTENT_LOOP) {
    this.settings = settings;
    const maxPeriod = Math.floor(settings.maxPeriod);
    this.maxPeriod = maxPeriod >= 1 ? Math.min(MAX_PERIOD, maxPeriod) : 1;
    let size = 64;
    while (size < 8 * this.maxPeriod) size *= 2;
    this.fullSize = size;
    this.table = size / 4;
    this.maxDistance = 4 * this.maxPeriod;
    const first = Math.min(size, FIRST_RING);
    this.mask = first - 1;
    this.buf = settings.repeats > 0 ? takeArray(this.table + first, this.table) : EMPTY;
  }

  /**
   * Optional: the response is over, so the detector's memory goes back to a pool for the next
   * one (it also does when a loop is found). Afterwards `push` only counts the length.
   */
  release(): void {
    if (this.buf.length > 0) giveArray(this.buf);
    this.buf = EMPTY;
  }

  /** total chars fed */
  get length(): number {
    return this.fed;
  }

  /**
   * Where the text fed so far must be held back from: just past the shown copies (`repeats`,
   * `minSpan`; `shown` instead, when set) of a repetition still running, the earliest such
   * point; `Infinity` while nothing repeats that far. A caller streams up to it, and the rest
   * once the repetition ends (this moves on) or the response does; if the repetition becomes a
   * loop, what was held is dropped. O(candidates): call it once per delta.
   */
  holdFrom(): number {
    if (this.count === 0 || this.buf.length === 0) return Infinity;
    const copies = this.shown;
    const i = this.fed - 1;
    const code = this.codeAt(i);
    let from = Infinity;
    for (let s = 0; s < this.count; s++) {
      if (this.candInert[s]) continue;
      const p = this.candPeriod[s];
      const run = this.candRun[s];
      const shown = copies !== undefined ? Math.max(1, copies) : 1 + (code ? this.candHoldCode[s] : this.candHoldProse[s]) / p;
      if (run < (shown - 1) * p) continue;
      if (!this.candAlnum[s] && !this.fires(s, i)) continue;
      from = Math.min(from, i + 1 - run - p + shown * p);
    }
    return from;
  }

  /** Feeds the next delta. Returns the loop once found (and from then on keeps returning it / ignores input); null otherwise. */
  push(text: string): ContentLoop | null {
    const start = this.fed;
    const n = text.length;
    this.fed = start + n;
    if (this.buf.length === 0) return this.found;
    if (start + n > this.mask + 1 && this.mask + 1 < this.fullSize) this.grow(start + n);
    const buf = this.buf;
    const mask = this.mask;
    const T = this.table;
    const tableMask = T - 1;
    const maxDistance = this.maxDistance;
    const candPeriod = this.candPeriod;
    const candRun = this.candRun;
    const candMin = this.candMin;
    let h = this.hash;
    let count = this.count;
    for (let k = 0; k < n; k++) {
      const i = start + k;
      const c = text.charCodeAt(k);
      buf[T + (i & mask)] = c;
      // a line ended: is it a fence or a table line (looked at once per line, at its end)
      if (c === 10) this.endLine(i);
      h = (h << 4) ^ c;
      // every 4th position: where this 8-gram was seen last (d: a multiple of 4, 0 for none)
      let d = 0;
      if ((i & 3) === 0) {
        const slot = (Math.imul(h, 0x9e3779b1) >>> 16) & tableMask;
        d = (i + 1 - buf[slot]) & 0xffff;
        buf[slot] = i + 1;
        if (d > maxDistance || buf[T + ((i - d) & mask)] !== c) d = 0;
      }
      // the candidates' runs: one more matching position, or the run broke
      let fire = -1;
      for (let s = 0; s < count; ) {
        const p = candPeriod[s];
        if (buf[T + ((i - p) & mask)] === c) {
          if (++candRun[s] >= candMin[s] && (fire < 0 || p < candPeriod[fire]) && this.reached(s, i)) fire = s;
          s++;
        } else {
          this.remove(s);
          count--;
        }
      }
      if (d !== 0 && fire < 0) {
        const s = this.propose(d, i);
        count = this.count;
        if (s >= 0 && candRun[s] >= candMin[s] && this.reached(s, i)) fire = s;
      }
      if (fire >= 0) {
        const p = candPeriod[fire];
        const run = candRun[fire];
        const atChar = i + 1 - run - p;
        const shown = this.shown !== undefined ? Math.max(1, this.shown) : 1 + (this.codeAt(i) ? this.candHoldCode[fire] : this.candHoldProse[fire]) / p;
        this.found = { kind: 'content', period: p, repeats: Math.floor((run + p) / p), atChar, endChar: i + 1, shownEnd: Math.min(i + 1, atChar + shown * p) };
        this.release();
        return this.found;
      }
    }
    this.hash = h;
    return null;
  }

  /** The ring doubles until it holds `upTo` characters (or its full size); table and positions stay where they are. */
  private grow(upTo: number): void {
    let size = this.mask + 1;
    while (size < upTo && size < this.fullSize) size *= 2;
    const next = takeArray(this.table + size, 0);
    next.set(this.buf);
    giveArray(this.buf);
    this.buf = next;
    this.mask = size - 1;
  }

  /**
   * The line that started at lineStart ended with the newline at i: a fence line (three
   * backticks or tildes after any indentation) opens or closes a fence, and the newline itself
   * belongs to the line it ends (a table row's newline is on a table line). A line longer than
   * the ring has lost its start and counts as prose.
   */
  private endLine(i: number): void {
    const buf = this.buf;
    const T = this.table;
    const mask = this.mask;
    const start = this.lineStart;
    let first = -1;
    let j = start;
    if (i - start <= mask) {
      while (j < i && (buf[T + (j & mask)] === 32 || buf[T + (j & mask)] === 9)) j++;
      if (j < i) first = buf[T + (j & mask)];
    }
    this.endedCode = this.fence || first === 124;
    if ((first === 96 || first === 126) && j + 2 < i && buf[T + ((j + 1) & mask)] === first && buf[T + ((j + 2) & mask)] === first) {
      if (!this.fence) {
        this.fence = true;
        this.fenceChar = first;
      } else if (first === this.fenceChar) this.fence = false;
    }
    this.lineStart = i + 1;
    this.lineTable = -1;
    for (let s = 0; s < this.count; s++) if (!this.candInert[s]) this.candMin[s] = Math.min(this.candProse[s], this.candCode[s]);
  }

  /** Whether position i is inside a fence or on a table line (its line's first character so far, looked up once). */
  private codeAt(i: number): boolean {
    if (i === this.lineStart - 1) return this.endedCode;
    if (this.fence) return true;
    if (this.lineTable < 0) {
      const buf = this.buf;
      const T = this.table;
      const mask = this.mask;
      if (i - this.lineStart > mask) return false;
      let j = this.lineStart;
      while (j <= i && (buf[T + (j & mask)] === 32 || buf[T + (j & mask)] === 9)) j++;
      if (j > i) return false; // only indentation so far
      this.lineTable = buf[T + (j & mask)] === 124 ? 1 : 0;
    }
    return this.lineTable === 1;
  }

  /**
   * The candidate's run passed `candMin`, the lower of its two thresholds: does it fire here? If
   * not, `candMin` becomes the threshold that applies, so the next characters of the line skip
   * this call (endLine lowers it again: a new line may be prose); an inert candidate never
   * comes back.
   */
  private reached(s: number, i: number): boolean {
    if (this.candInert[s]) {
      this.candMin[s] = Infinity;
      return false;
    }
    const threshold = this.codeAt(i) ? this.candCode[s] : this.candProse[s];
    if (this.candRun[s] >= threshold) {
      if (this.fires(s, i)) return true;
      this.candMin[s] = Infinity;
      return false;
    }
    // only once this line's context is settled: not on the newline (it belongs to the line
    // before), not while the line has had nothing but indentation
    if (i !== this.lineStart - 1 && (this.fence || this.lineTable >= 0)) this.candMin[s] = threshold;
    return false;
  }

  /** The candidate's run reached its threshold: it fires unless its unit has no letter or digit. */
  private fires(s: number, i: number): boolean {
    if (this.candInert[s]) return false;
    const p = this.candPeriod[s];
    const buf = this.buf;
    const T = this.table;
    const mask = this.mask;
    if (this.candAlnum[s]) return true;
    for (let j = i - p + 1; j <= i; j++) {
      const c = buf[T + (j & mask)];
      if (c >= 0xdc00 && c <= 0xdfff && j > i - p + 1) {
        const hi = buf[T + ((j - 1) & mask)];
        if (hi >= 0xd800 && hi <= 0xdbff && ALNUM.test(String.fromCharCode(hi, c))) return (this.candAlnum[s] = 1) === 1;
      } else if (alnumUnit(c)) return (this.candAlnum[s] = 1) === 1;
    }
    // the same unit (rotated) as long as the run lasts: never looked at again
    this.candInert[s] = 1;
    return false;
  }

  /** How many positions back from i, i included, s[j] = s[j − p] holds (bounded by the text and the ring). */
  private runOf(p: number, i: number): number {
    const buf = this.buf;
    const T = this.table;
    const mask = this.mask;
    const limit = Math.min(i - p + 1, mask + 1 - p);
    let run = 0;
    while (run < limit && buf[T + ((i - run) & mask)] === buf[T + ((i - run - p) & mask)]) run++;
    return run;
  }

  /**
   * The table's distance d = lcm(p, 4) names a period p among d/4, d/2 and d: the smallest whose
   * repetition starts no later than d's becomes a candidate. Returns its slot, or -1.
   */
  private propose(d: number, i: number): number {
    // a multiple of a period already followed is that period's repetition (a run still unbroken)
    for (let s = 0; s < this.count; s++) if (d % this.candPeriod[s] === 0) return -1;
    const runD = this.runOf(d, i);
    if (runD < Q) return -1; // a hash collision, or too short to be a repeat yet
    let p = d;
    let run = runD;
    for (const q of [d / 4, d / 2]) {
      if (!Number.isInteger(q)) continue;
      const r = this.runOf(q, i);
      if (r + q >= runD + d) {
        p = q;
        run = r;
        break;
      }
    }
    if (p > this.maxPeriod) return -1;
    for (let s = 0; s < this.count; s++) if (this.candPeriod[s] === p) return -1;
    let s = this.count;
    if (s === SLOTS) {
      // full: the new period replaces the shortest run, if its own is longer
      s = 0;
      for (let t = 1; t < SLOTS; t++) if (this.candRun[t] < this.candRun[s]) s = t;
      if (this.candRun[s] >= run) return -1;
    } else this.count++;
    const { repeats, minSpan, codeRepeats, codeMinSpan } = this.settings;
    const f = Math.max(1, this.settings.fireFactor ?? 1);
    this.candPeriod[s] = p;
    this.candRun[s] = run;
    // a loop: fireFactor times the shown copies and span; shown: what streams while it repeats
    this.candProse[s] = (needed(repeats * f, minSpan * f, p) - 1) * p;
    this.candCode[s] = (needed(codeRepeats * f, codeMinSpan * f, p) - 1) * p;
    this.candHoldProse[s] = (needed(repeats, minSpan, p) - 1) * p;
    this.candHoldCode[s] = (needed(codeRepeats, codeMinSpan, p) - 1) * p;
    this.candMin[s] = Math.min(this.candProse[s], this.candCode[s]);
    this.candInert[s] = 0;
    this.candAlnum[s] = 0;
    return s;
  }

  private remove(s: number): void {
    const t = --this.count;
    if (s === t) return;
    this.candPeriod[s] = this.candPeriod[t];
    this.candRun[s] = this.candRun[t];
    this.candProse[s] = this.candProse[t];
    this.candCode[s] = this.candCode[t];
    this.candMin[s] = this.candMin[t];
    this.candInert[s] = this.candInert[t];
    this.candHoldProse[s] = this.candHoldProse[t];
    this.candHoldCode[s] = this.candHoldCode[t];
    this.candAlnum[s] = this.candAlnum[t];
  }
}
