/**
 * A streaming detector of degenerate repetition: one passage written again and again, back to
 * back (a known failure of DeepSeek and of small local models, which otherwise runs until
 * `max_tokens`). Fed delta by delta, it keeps a bounded window of recent characters and a few
 * candidate periods, so each character costs O(1) and no delta re-reads the answer.
 */
export interface ContentLoopSettings {
  /** copies of one passage, back to back, that end a response in prose (LOOP_CONTENT_REPEATS); 0 turns detection off */
  repeats: number;
  /** the least span (chars) the copies must cover in prose, so that short units ("ha", "the ") need more copies */
  minSpan: number;
  /** inside fenced code blocks and markdown table lines (lines starting with `|`): the stricter thresholds */
  codeRepeats: number;
  codeMinSpan: number;
  /** the longest period looked for (bounds memory) */
  maxPeriod: number;
}

export const DEFAULT_CONTENT_LOOP: ContentLoopSettings = { repeats: 8, minSpan: 100, codeRepeats: 16, codeMinSpan: 512, maxPeriod: 1024 };

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

const Q = 8;
const TABLE_BITS = 14;
const MAX_CANDIDATES = 8;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

interface Candidate {
  period: number;
  /** consecutive positions i (ending at the last char) with s[i] === s[i - period] */
  run: number;
}

export class ContentLoopDetector {
  private readonly settings: ContentLoopSettings;
  private readonly buf: Uint16Array;
  private readonly mask: number;
  private readonly last = new Int32Array(1 << TABLE_BITS).fill(-1);
  private candidates: Candidate[] = [];
  private hash = 0;
  private pow = 1;
  private n = 0;
  private found: ContentLoop | null = null;
  private inFence = false;
  /** line state: chars since the line start (up to 3), whether the line starts with `|` */
  private lineCol = 0;
  private lineTicks = 0;
  private tableLine = false;

  constructor(settings: ContentLoopSettings = DEFAULT_CONTENT_LOOP) {
    this.settings = settings;
    let size = 1;
    while (size < 2 * settings.maxPeriod + Q) size <<= 1;
    this.buf = new Uint16Array(size);
    this.mask = size - 1;
    for (let i = 0; i < Q - 1; i++) this.pow = Math.imul(this.pow, 31);
  }

  get length(): number {
    return this.n;
  }

  push(text: string): ContentLoop | null {
    if (this.found || this.settings.repeats <= 0) return this.found;
    for (let k = 0; k < text.length; k++) {
      if (this.feed(text.charCodeAt(k))) return this.found;
    }
    return null;
  }

  private feed(c: number): boolean {
    const i = this.n++;
    const buf = this.buf;
    const mask = this.mask;
    const out = i >= Q ? buf[(i - Q) & mask] : 0;
    buf[i & mask] = c;
    this.line(c);
    // rolling hash of the last Q chars
    this.hash = (Math.imul(this.hash - Math.imul(out, this.pow), 31) + c) | 0;
    // runs of the candidates go on or break
    if (this.candidates.length > 0) {
      const keep: Candidate[] = [];
      for (const cand of this.candidates) {
        if (buf[(i - cand.period) & mask] === c) {
          cand.run += 1;
          keep.push(cand);
        }
      }
      this.candidates = keep;
    }
    if (i >= Q - 1) {
      const slot = (this.hash >>> (32 - TABLE_BITS));
      const prev = this.last[slot];
      this.last[slot] = i;
      const d = i - prev;
      if (prev >= 0 && d <= this.settings.maxPeriod && this.candidates.length < MAX_CANDIDATES && !this.candidates.some((x) => x.period === d)) {
        const run = this.runBack(i, d);
        if (run >= Q) this.candidates.push({ period: d, run });
      }
    }
    return this.check(i);
  }

  /** How many chars before and at i equal the char one period earlier (bounded by the window). */
  private runBack(i: number, d: number): number {
    const limit = Math.min(i - d + 1, this.buf.length - d - 1);
    let run = 0;
    while (run < limit && this.buf[(i - run) & this.mask] === this.buf[(i - run - d) & this.mask]) run++;
    return run;
  }

  private check(i: number): boolean {
    const code = this.inFence || this.tableLine;
    const repeats = code ? this.settings.codeRepeats : this.settings.repeats;
    const span = code ? this.settings.codeMinSpan : this.settings.minSpan;
    let best: Candidate | null = null;
    for (const cand of this.candidates) {
      const needed = Math.max(repeats, Math.ceil(span / cand.period));
      if (cand.run >= (needed - 1) * cand.period && (!best || cand.period < best.period) && this.meaningful(i, cand.period)) best = cand;
    }
    if (!best) return false;
    const copies = 1 + Math.floor(best.run / best.period);
    this.found = { kind: 'content', period: best.period, repeats: copies, atChar: i + 1 - best.run - best.period, endChar: i + 1 };
    return true;
  }

  /** A passage of only whitespace, punctuation or symbols (rules, table separators) is never a loop. */
  private meaningful(i: number, period: number): boolean {
    let s = '';
    for (let k = i - period + 1; k <= i; k++) s += String.fromCharCode(this.buf[k & this.mask]);
    return LETTER_OR_DIGIT.test(s);
  }

  private line(c: number): void {
    if (c === 10) {
      this.lineCol = 0;
      this.lineTicks = 0;
      this.tableLine = false;
      return;
    }
    if (this.lineCol === 0 && c === 124) this.tableLine = true;
    if (this.lineCol === this.lineTicks && c === 96) {
      this.lineTicks += 1;
      if (this.lineTicks === 3) this.inFence = !this.inFence;
    }
    this.lineCol += 1;
  }
}
