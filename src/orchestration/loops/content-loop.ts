/**
 * The content-loop detector: finds a passage that the model repeats back to back ("degenerate
 * repetition") while the text streams, so the caller can stop the upstream request before the
 * rest of the loop reaches the client.
 *
 * A loop is `needed(p) = max(R, ceil(S / p))` complete copies, back to back, of a passage of
 * period p (R, S: `repeats`/`minSpan` in prose, `codeRepeats`/`codeMinSpan` inside a fenced code
 * block or on a markdown table line). The span S makes short units ("ha", "the ") need more
 * copies than sentences. A passage with no letter or digit (`\p{L}`, `\p{N}`) never counts:
 * whitespace runs, rules (`-----`), table separators, ellipses.
 *
 * Cost: bounded memory (a ring of the last `ring` characters, a fixed table of recent 8-grams, at
 * most 8 candidate periods) and O(1) amortised work per character, whatever the delta sizes. Per
 * character: the character goes into the ring; a hash of the last 8 characters (a shift-xor
 * hash, so no character has to be taken out) looks up where that 8-gram was seen last, which
 * proposes a period d (the distance, 1 ≤ d ≤ maxPeriod); a new period is verified backwards once
 * (bounded by the ring) so its run starts where the repetition really starts; each candidate
 * keeps a run of consecutive positions where s[i] = s[i − p] and is dropped when the run breaks.
 * In a periodic stretch the nearest earlier occurrence of every 8-gram is one period back, so the
 * candidate is the smallest period. Deterministic per character: splitting the same text into
 * other deltas gives the same result.
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
// markdown context bits
/** the ring's first size: a short answer allocates little */
const FIRST_RING = 256;
/** every 4th position looks its 8-gram up (every position enters it): a period is found within 4 characters, at a quarter of the cost */
const LOOKUP_EVERY = 4;
const NO_PERIOD = 0x7fffffff;
/** table slots per ring position */
const TABLE_PER_RING = 1;
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
  /** the ring's and the table's final size: 4 × maxPeriod, a power of two */
  private readonly fullSize: number;
  /**
   * The last `mask + 1` characters fed, by position & mask. Starts small and doubles while the
   * text is shorter than it (nothing is overwritten yet), so a short answer costs little.
   */
  private ring: Uint16Array;
  private mask: number;
  /**
   * 8-gram hash → 1 + the last position where it ended, modulo 2^16 (small, so ring and table
   * stay in the L1 cache; a wrong distance from an older wrap-around fails verification)
   */
  private last: Uint16Array;
  private tableShift: number;
  // candidates: period, run, the run that fires in prose / in code, 1 if the unit has no letter or digit
  private readonly candPeriod = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candRun = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candProse = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candCode = [0, 0, 0, 0, 0, 0, 0, 0];
  private readonly candInert = [0, 0, 0, 0, 0, 0, 0, 0];
  private count = 0;
  private hash = 0;
  private fed = 0;
  // markdown context, one bit each (LEAD: only whitespace so far on this line, TABLE: the line
  // starts with `|`, FENCE: a fence is open) and the backticks or tildes opening this line
  private ctx = LEAD;
  private fenceChar = 0;
  private ticks = 0;
  private tickChar = 0;
  private found: ContentLoop | null = null;

  constructor(settings: ContentLoopSettings = DEFAULT_CONTENT_LOOP) {
    this.settings = settings;
    this.maxPeriod = Math.max(1, Math.floor(settings.maxPeriod));
    this.off = !(settings.repeats > 0);
    let size = 64;
    while (size < 4 * this.maxPeriod) size *= 2;
    this.fullSize = size;
    const first = Math.min(size, FIRST_RING);
    this.ring = new Uint16Array(first);
    this.mask = first - 1;
    this.last = new Uint16Array(first * TABLE_PER_RING);
    this.tableShift = 32 - Math.log2(first * TABLE_PER_RING);
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
    const shift = this.tableShift;
    const maxPeriod = this.maxPeriod;
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
      const slot = Math.imul(h, 0x9e3779b1) >>> shift;
      // every position enters the table; every LOOKUP_EVERY-th asks it for a period
      const d = (i & (LOOKUP_EVERY - 1)) === 0 ? (i + 1 - last[slot]) & 0xffff : NO_PERIOD;
      last[slot] = i + 1;
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
      if (d <= maxPeriod && fire < 0 && ring[(i - d) & mask] === c) {
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
   * so positions stay where they are). The new table starts empty: rehashing would cost more
   * than it brings, and a period is found again within one period of new text.
   */
  private grow(): void {
    const size = (this.mask + 1) * 2;
    const ring = new Uint16Array(size);
    ring.set(this.ring);
    this.ring = ring;
    this.mask = size - 1;
    this.last = new Uint16Array(size * TABLE_PER_RING);
    this.tableShift = 32 - Math.log2(size * TABLE_PER_RING);
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

  /** A period the 8-gram table suggests; verified backwards once. Returns its slot, or -1. */
  private propose(d: number, i: number): number {
    for (let s = 0; s < this.count; s++) if (this.candPeriod[s] === d) return -1;
    const ring = this.ring;
    const mask = this.mask;
    // compare back to the start of the text or of the ring, whichever is nearer
    const limit = Math.min(i - d + 1, mask + 1 - d);
    let run = 0;
    while (run < limit && ring[(i - run) & mask] === ring[(i - run - d) & mask]) run++;
    if (run < Q) return -1; // a hash collision, or too short to be a repeat yet
    let s = this.count;
    if (s === SLOTS) {
      // full: the new period replaces the shortest run, if its own is longer
      s = 0;
      for (let t = 1; t < SLOTS; t++) if (this.candRun[t] < this.candRun[s]) s = t;
      if (this.candRun[s] >= run) return -1;
    } else this.count++;
    const { repeats, minSpan, codeRepeats, codeMinSpan } = this.settings;
    this.candPeriod[s] = d;
    this.candRun[s] = run;
    this.candProse[s] = (needed(repeats, minSpan, d) - 1) * d;
    this.candCode[s] = (needed(codeRepeats, codeMinSpan, d) - 1) * d;
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
