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
 * Cost: bounded memory (a ring of the last characters, a table of recent 8-grams, at most 8
 * candidate periods; both arrays start small and double up to 8 × maxPeriod and 4 × maxPeriod
 * entries of 16 bits) and O(1) amortised work per character, whatever the delta sizes:
 *
 * - every character goes into the ring and into a shift-xor hash of the last 8 characters (no
 *   character has to be taken out: older ones shift past the 32 bits);
 * - every 4th position (i ≡ 0 mod 4) enters its 8-gram into the table and reads where that
 *   8-gram was entered last. In a stretch of period p the answer is d = lcm(p, 4), so the period
 *   is d, d/2 or d/4: each is verified backwards once (bounded by the ring), the smallest whose
 *   repetition covers the same stretch becomes a candidate, its run starting where the
 *   repetition really starts. Only a quarter of the positions touch the table, and since the
 *   positions that do are the same in every copy of the unit, no other part of the unit can
 *   overwrite the entry the next copy looks for;
 * - each candidate keeps a run of consecutive positions where s[i] = s[i − p]; it is dropped
 *   when the run breaks and fires when the run reaches (needed(p) − 1) × p.
 *
 * Everything depends on positions in the text only, so splitting the same text into other
 * deltas gives the same result. A period is found once the stretch is lcm(p, 4) + 11 characters
 * long at most, before it can fire when R ≥ 5 (with a smaller R, a loop of an odd period may
 * fire up to a copy late).
 *
 * Known limits: copies that differ (whitespace, a changing number, a typo) are not one passage;
 * such a loop is caught only once it settles into exact copies. Positions are UTF-16 units; an
 * emoji is two units (and a symbol: a run of emoji never counts).
 */

export interface ContentLoopSettings {
  /** copies of one passage, back to back, that end a response in prose (LOOP_CONTENT_REPEATS); 0 turns detection off */
  repeats: number;
  /** the least span (chars) the copies must cover in prose, so that short units ("ha", "the ") need more copies */
  minSpan: number;
  /** inside fenced code blocks and markdown table lines (lines starting with `|`): the stricter thresholds */
  codeRepeats: number;
  codeMinSpan: number;
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
  /** offset just past the character that fired: text from here on must not be streamed */
  endChar: number;
}

/** candidate periods followed at once */
const SLOTS = 8;
/** the q of the q-gram hash: a new period needs this many matching characters */
const Q = 8;
/** the ring's first size (characters): a short answer allocates little */
const FIRST_RING = 256;
/** the longest period supported: the table holds positions modulo 2^16, and d ≤ 4 × maxPeriod */
const MAX_PERIOD = 8192;
// markdown context bits: only whitespace so far on this line; the line starts with `|`; a fence is open
const LEAD = 1;
const TABLE = 2;
const FENCE = 4;

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

/** Copies of a passage of period p that make a loop: at least two, whatever the settings. */
export function needed(repeats: number, minSpan: number, p: number): number {
  return Math.max(2, repeats, Math.ceil(minSpan / p));
}

export class ContentLoopDetector {
  private readonly settings: ContentLoopSettings;
  private readonly off: boolean;
  private readonly maxPeriod: number;
  /** the ring's final size: 8 × maxPeriod rounded up to a power of two (the table's is half) */
  private readonly fullSize: number;
  /**
   * The last `mask + 1` characters fed, by position & mask. Starts small and doubles while the
   * text is shorter than it (nothing is overwritten yet), so a short answer costs little.
   */
  private ring: Uint16Array;
  private mask: number;
  /**
   * 8-gram hash → 1 + the last position ≡ 0 mod 4 where it ended, modulo 2^16 (16 bits keep
   * ring and table small enough for the L1 cache; a wrong distance fails verification)
   */
  private last: Uint16Array;
  private tableMask: number;
  // candidates: period, run, the run that fires in prose / in code, 1 if the unit has no letter or digit
  private readonly candPeriod = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candRun = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candProse = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candCode = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candInert = [0, 0, 0, 0, 0, 0, 0, 0];
  private count = 0;
  private hash = 0;
  private fed = 0;
  // markdown context (bits above) and the backticks or tildes opening this line
  private ctx = LEAD;
  private fenceChar = 0;
  private ticks = 0;
  private tickChar = 0;
  private found: ContentLoop | null = null;

  constructor(settings: ContentLoopSettings = DEFAULT_CONTENT_LOOP) {
    this.settings = settings;
    this.maxPeriod = Math.min(MAX_PERIOD, Math.max(1, Math.floor(settings.maxPeriod)));
    this.off = !(settings.repeats > 0);
    let size = 64;
    while (size < 8 * this.maxPeriod) size *= 2;
    this.fullSize = size;
    const first = Math.min(size, FIRST_RING);
    this.ring = new Uint16Array(first);
    this.mask = first - 1;
    this.last = new Uint16Array(first / 2);
    this.tableMask = first / 2 - 1;
  }

  /** total chars fed */
  get length(): number {
    return this.fed;
  }

  /** Feeds the next delta. Returns the loop once found (and from then on keeps returning it / ignores input); null otherwise. */
  push(text: string): ContentLoop | null {
    const start = this.fed;
    const n = text.length;
    this.fed += n;
    if (this.found !== null || this.off) return this.found;
    // the ring grows at fixed positions (when the text reaches its size), whatever the deltas
    let from = 0;
    while (start + n > this.mask + 1 && this.mask + 1 < this.fullSize) {
      const to = this.mask + 1 - start;
      if (to > from && this.scan(text, start, from, to)) return this.found;
      from = Math.max(from, to);
      this.grow();
    }
    this.scan(text, start, from, n);
    return this.found;
  }

  /** Reads text[from, to) (the text starts at position `start`); true when the loop was found. */
  private scan(text: string, start: number, from: number, n: number): boolean {
    const ring = this.ring;
    const mask = this.mask;
    const last = this.last;
    const tableMask = this.tableMask;
    const maxDistance = Math.min(4 * this.maxPeriod, mask + 1);
    const candPeriod = this.candPeriod;
    const candRun = this.candRun;
    let h = this.hash;
    let ctx = this.ctx;
    for (let k = from; k < n; k++) {
      const i = start + k;
      const c = text.charCodeAt(k);
      ring[i & mask] = c;
      // markdown context of this character (a newline belongs to the line it ends)
      let code = ctx & (TABLE | FENCE);
      if (c === 10) {
        ctx = (ctx & FENCE) | LEAD;
        this.ticks = 0;
      } else if (ctx & LEAD) {
        if (c !== 32 && c !== 9) {
          ctx &= ~LEAD;
          if (c === 124) {
            ctx |= TABLE;
            code = TABLE;
          } else if (c === 96 || c === 126) {
            this.ticks = 1;
            this.tickChar = c;
          }
        }
      } else if (this.ticks !== 0) {
        if (c === this.tickChar) {
          if (++this.ticks === 3) {
            ctx = this.toggleFence(ctx, c);
            code = ctx & FENCE;
          }
        } else this.ticks = 0;
      }
      h = (h << 4) ^ c;
      // every 4th position: where this 8-gram was seen last (d: a multiple of 4, 0 for none)
      let d = 0;
      if ((i & 3) === 0) {
        const slot = (Math.imul(h, 0x9e3779b1) >>> 16) & tableMask;
        d = (i + 1 - last[slot]) & 0xffff;
        last[slot] = i + 1;
        if (d > maxDistance || ring[(i - d) & mask] !== c) d = 0;
      }
      // the candidates' runs: one more matching position, or the run broke
      let fire = -1;
      for (let s = 0, count = this.count; s < count; ) {
        const p = candPeriod[s];
        if (ring[(i - p) & mask] === c) {
          const run = ++candRun[s];
          if (run >= (code ? this.candCode[s] : this.candProse[s]) && (fire < 0 || p < candPeriod[fire]) && this.fires(s, i)) fire = s;
          s++;
        } else {
          this.remove(s);
          count--;
        }
      }
      if (d !== 0 && fire < 0) {
        const s = this.propose(d, i);
        if (s >= 0 && candRun[s] >= (code ? this.candCode[s] : this.candProse[s]) && this.fires(s, i)) fire = s;
      }
      if (fire >= 0) {
        const p = candPeriod[fire];
        const run = candRun[fire];
        this.hash = h;
        this.ctx = ctx;
        this.found = { kind: 'content', period: p, repeats: Math.floor((run + p) / p), atChar: i + 1 - run - p, endChar: i + 1 };
        return true;
      }
    }
    this.hash = h;
    this.ctx = ctx;
    return false;
  }

  /**
   * Doubles the ring and the table once the text has filled the ring (nothing was overwritten,
   * so positions stay where they are). A slot of the old table becomes one of two slots of the
   * new one (one more bit of the same hash), so the old table is copied into both halves: the
   * entry is where the next lookup goes, and its twin, a wrong distance, fails verification.
   */
  private grow(): void {
    const size = (this.mask + 1) * 2;
    const ring = new Uint16Array(size);
    ring.set(this.ring);
    const last = new Uint16Array(size / 2);
    last.set(this.last);
    last.set(this.last, size / 4);
    this.ring = ring;
    this.mask = size - 1;
    this.last = last;
    this.tableMask = size / 2 - 1;
  }

  /** A fence opens or closes at the third backtick (or tilde) at the start of a line. */
  private toggleFence(ctx: number, c: number): number {
    if (!(ctx & FENCE)) {
      this.fenceChar = c;
      return ctx | FENCE;
    }
    return c === this.fenceChar ? ctx & ~FENCE : ctx;
  }

  /** The candidate's run reached its threshold: it fires unless its unit has no letter or digit. */
  private fires(s: number, i: number): boolean {
    if (this.candInert[s]) return false;
    const p = this.candPeriod[s];
    const ring = this.ring;
    const mask = this.mask;
    for (let j = i - p + 1; j <= i; j++) {
      const c = ring[j & mask];
      if (c >= 0xdc00 && c <= 0xdfff && j > i - p + 1) {
        const hi = ring[(j - 1) & mask];
        if (hi >= 0xd800 && hi <= 0xdbff && ALNUM.test(String.fromCharCode(hi, c))) return true;
      } else if (alnumUnit(c)) return true;
    }
    // the same unit (rotated) as long as the run lasts: never looked at again
    this.candInert[s] = 1;
    return false;
  }

  /** How many positions back from i, i included, s[j] = s[j − p] holds (bounded by the text and the ring). */
  private runOf(p: number, i: number): number {
    const ring = this.ring;
    const mask = this.mask;
    const limit = Math.min(i - p + 1, mask + 1 - p);
    let run = 0;
    while (run < limit && ring[(i - run) & mask] === ring[(i - run - p) & mask]) run++;
    return run;
  }

  /**
   * The table's distance d = lcm(p, 4) names a period p among d/4, d/2 and d: the smallest whose
   * repetition starts no later than d's becomes a candidate. Returns its slot, or -1.
   */
  private propose(d: number, i: number): number {
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
    this.candPeriod[s] = p;
    this.candRun[s] = run;
    this.candProse[s] = (needed(repeats, minSpan, p) - 1) * p;
    this.candCode[s] = (needed(codeRepeats, codeMinSpan, p) - 1) * p;
    this.candInert[s] = 0;
    return s;
  }

  private remove(s: number): void {
    const t = --this.count;
    if (s === t) return;
    this.candPeriod[s] = this.candPeriod[t];
    this.candRun[s] = this.candRun[t];
    this.candProse[s] = this.candProse[t];
    this.candCode[s] = this.candCode[t];
    this.candInert[s] = this.candInert[t];
  }
}
