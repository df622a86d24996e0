import fc from 'fast-check';
import { ContentLoopDetector, DEFAULT_CONTENT_LOOP, needed, type ContentLoop, type ContentLoopSettings } from './content-loop';

/** Feeds `text` in the given deltas; the loop found, if any. */
function run(deltas: string[], settings: ContentLoopSettings = D): ContentLoop | null {
  const d = new ContentLoopDetector(settings);
  let found: ContentLoop | null = null;
  for (const delta of deltas) found = d.push(delta) ?? found;
  return found;
}

/** Cuts text at the given (sorted, deduplicated) offsets. */
function split(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const c of at) {
    out.push(text.slice(from, c));
    from = c;
  }
  out.push(text.slice(from));
  return out;
}

/**
 * The thresholds these cases check, as a loop is declared at once (fireFactor 1: shown copies =
 * loop copies); the held copies between the two are the last describe block's.
 */
const D: ContentLoopSettings = { ...DEFAULT_CONTENT_LOOP, fireFactor: 1 };
const prose = (p: number) => needed(D.repeats, D.minSpan, p);
const S48 = 'The function returns the cached value directly. ';

describe('ContentLoopDetector', () => {
  it('stops a 48-character sentence repeated 150 times after `repeats` copies, at the end of the last one', () => {
    const text = S48.repeat(150);
    const loop = run(split(text, [5, 17, 100, 101, 400]));
    expect(loop).toEqual({ kind: 'content', period: 48, repeats: D.repeats, atChar: 0, endChar: 48 * D.repeats, shownEnd: 48 * D.repeats });
    // what the client may see: at most 10 copies
    expect(loop!.endChar / 48).toBeLessThanOrEqual(10);
  });

  it('keeps the good start: the loop starts where the repetition does', () => {
    const start = 'I read the file. It has three sections.\n\n';
    const loop = run([start, ...split(S48.repeat(120), [3, 9, 30])])!;
    expect(loop.atChar).toBe(start.length);
    expect(loop.period).toBe(48);
    expect(loop.endChar - loop.atChar).toBe(48 * D.repeats);
  });

  it('needs more copies of a short unit (the span), and fires on the smallest period', () => {
    const loop = run(['ha'.repeat(200)])!;
    expect(loop.period).toBe(2);
    expect(loop.repeats).toBe(Math.ceil(D.minSpan / 2));
    expect(loop.endChar).toBe(D.minSpan);
    expect(run(['ha'.repeat(Math.ceil(D.minSpan / 2) - 1)])).toBeNull();
  });

  it('does not fire on one copy fewer than needed', () => {
    expect(run([S48.repeat(D.repeats - 1)])).toBeNull();
    expect(run([S48.repeat(D.repeats)])).not.toBeNull();
  });

  it('never fires on whitespace, rules, separators or ellipses, however long', () => {
    for (const text of [' '.repeat(5000), '\n'.repeat(3000), '-'.repeat(5000), '|---|---|\n'.repeat(300), '.'.repeat(4000), '🎉'.repeat(1000), '\t \t'.repeat(900)]) {
      expect(run([text])).toBeNull();
    }
  });

  it('a loop of punctuation does not hide a loop of words that follows it', () => {
    const loop = run(['-'.repeat(3000), S48.repeat(20)])!;
    expect(loop.period).toBe(48);
    expect(loop.atChar).toBe(3000);
  });

  it('inside a code fence and on table lines it takes the stricter thresholds', () => {
    const line = '    result = result + compute(item)\n';
    const inCode = run(['```python\n', line.repeat(200)])!;
    expect(inCode.period).toBe(line.length);
    expect(inCode.repeats).toBe(needed(D.codeRepeats, D.codeMinSpan, line.length));
    // the same lines in prose fire after the prose thresholds
    expect(run([line.repeat(200)])!.repeats).toBe(prose(line.length));
    // after the fence closes, prose thresholds again
    expect(run(['```\ncode\n```\n', S48.repeat(20)])!.repeats).toBe(D.repeats);
    // a table repeating one row
    const row = '| 7 | worker-7 | running |\n';
    expect(run(['| a | b | c |\n|---|---|---|\n', row.repeat(200)])!.repeats).toBe(needed(D.codeRepeats, D.codeMinSpan, row.length));
    // a tilde fence is a fence too, and a backtick line inside it does not close it
    expect(run(['~~~\n```\n', line.repeat(200)])!.repeats).toBe(needed(D.codeRepeats, D.codeMinSpan, line.length));
  });

  it('repeats: 0 turns detection off', () => {
    expect(run([S48.repeat(150)], { ...D, repeats: 0 })).toBeNull();
  });

  it('after firing it keeps returning the same loop and ignores what follows, still counting the length', () => {
    const d = new ContentLoopDetector(D);
    const first = d.push(S48.repeat(20));
    expect(first).not.toBeNull();
    expect(d.push('more text')).toBe(first);
    expect(d.length).toBe(48 * 20 + 'more text'.length);
  });

  it('counts UTF-16 units: CJK characters are one unit each', () => {
    const unit = '这个问题的原因是配置文件没有被正确加载。';
    const loop = run([`好的，${unit.repeat(30)}`])!;
    expect(loop.period).toBe(unit.length);
    expect(loop.atChar).toBe(3);
  });

  it('finds a period up to maxPeriod, and not beyond', () => {
    let seed = 11;
    const letter = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return String.fromCharCode(0x61 + (seed >> 16) % 26);
    };
    const paragraph = (n: number) => Array.from({ length: n }, letter).join('') + '. ';
    const long = paragraph(1000);
    expect(run([long.repeat(10)])!.period).toBe(long.length);
    expect(run([paragraph(1100).repeat(10)])).toBeNull();
  });

  it('release() gives its memory to the next detector, which finds the same loops as a fresh one', () => {
    const text = 'Start. ' + S48.repeat(40);
    const fresh = run(split(text, [10, 20, 300]));
    for (let k = 0; k < 3; k++) {
      const used = new ContentLoopDetector(D);
      used.push(Array.from({ length: 3000 }, (_, i) => `x${i}`).join(' '));
      used.release();
      expect(used.push('more')).toBeNull();
      expect(run(split(text, [10, 20, 300]))).toEqual(fresh);
    }
  });

  describe('properties', () => {
    // prose (no line starting a fence or a table): letters, digits, spaces and punctuation
    const PROSE = [...'abcdefghijklmnopqrstuvwxyz0123456789 ,.;:!?-中文'];
    const proseArb = (maxLength: number) => fc.string({ unit: fc.constantFrom(...PROSE), maxLength });
    // a unit with at least one letter
    const unitArb = fc.tuple(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzäöü中文日本'), proseArb(199)).map(([a, b]) => a + b);

    it('gives the same result however the text is split into deltas', () => {
      fc.assert(
        fc.property(fc.string({ maxLength: 60 }), unitArb, fc.integer({ min: 1, max: 30 }), fc.array(fc.nat(), { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 40 }), (prefix, unit, n, cutsA, cutsB) => {
          const text = prefix + unit.repeat(n) + 'end';
          const a = run(split(text, cutsA));
          const b = run(split(text, cutsB));
          const whole = run([text]);
          expect(a).toEqual(whole);
          expect(b).toEqual(whole);
        }),
        { numRuns: 300 },
      );
    });

    it('a unit repeated at least needed times always fires, showing at most needed copies', () => {
      fc.assert(
        fc.property(proseArb(80), unitArb, fc.integer({ min: 0, max: 5 }), fc.array(fc.nat(), { maxLength: 30 }), (prefix, unit, extra, cuts) => {
          const n = prose(unit.length) + extra;
          const loop = run(split(prefix + unit.repeat(n), cuts));
          expect(loop).not.toBeNull();
          // the smallest period of the repetition divides the unit, and fires no later than the unit would
          expect(unit.length % loop!.period).toBe(0);
          expect(loop!.endChar).toBeLessThanOrEqual(prefix.length + prose(unit.length) * unit.length);
          expect(loop!.endChar - loop!.atChar).toBeLessThanOrEqual(prose(loop!.period) * loop!.period);
          expect(loop!.repeats).toBe(prose(loop!.period));
        }),
        { numRuns: 300 },
      );
    });

    it('random text that does not repeat never fires', () => {
      // words drawn at random from a large vocabulary: no passage repeats back to back
      fc.assert(
        fc.property(fc.array(fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), minLength: 2, maxLength: 10 }), { minLength: 50, maxLength: 600 }), fc.array(fc.nat(), { maxLength: 50 }), (words, cuts) => {
          expect(run(split(words.join(' '), cuts))).toBeNull();
        }),
        { numRuns: 200 },
      );
    });

    it('random characters from a small alphabet never fire', () => {
      fc.assert(
        fc.property(fc.string({ unit: fc.constantFrom(...'abcde '), minLength: 100, maxLength: 5000 }), (text) => {
          expect(run([text])).toBeNull();
        }),
        { numRuns: 100 },
      );
    });
  });

  it('memory stays bounded: megabytes of text leave the same buffers', () => {
    const d = new ContentLoopDetector(D);
    const state = d as unknown as { buf: Uint16Array };
    let seed = 7;
    const word = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return 'w' + seed.toString(36).slice(0, 5);
    };
    const chunk = () => Array.from({ length: 2000 }, word).join(' ') + ' ';
    d.push(chunk());
    const size = state.buf.length;
    let fed = 0;
    while (fed < 4_000_000) {
      const c = chunk();
      expect(d.push(c)).toBeNull();
      fed += c.length;
    }
    expect(state.buf.length).toBe(size);
    // a ring of 8 × maxPeriod characters and a table of 2 × maxPeriod entries, 16 bits each
    expect(state.buf.length).toBe(10 * D.maxPeriod);
    expect(d.length).toBeGreaterThan(4_000_000);
  });
});
