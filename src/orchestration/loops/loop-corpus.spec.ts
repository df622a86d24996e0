import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deltasOf, textSamples, toolScripts } from '../../../test/fixtures/loops/corpus';
import { TEXT_SAMPLES } from '../../../test/fixtures/loops/generate';
import { ContentLoopDetector, DEFAULT_CONTENT_LOOP, needed, type ContentLoop } from './content-loop';

/**
 * The regression gate of the content-loop detector: with the defaults, every looping sample of
 * the corpus (test/fixtures/loops) is caught and no legitimate one fires. bench:loops prints the
 * same per kind, with costs.
 */
function detect(text: string, offset = 0): ContentLoop | null {
  const d = new ContentLoopDetector();
  for (const delta of deltasOf(text, offset)) {
    const loop = d.push(delta);
    if (loop) return loop;
  }
  return null;
}

const samples = textSamples();

describe('loop corpus', () => {
  it('text.jsonl is what generate.ts writes (edit the script, not the file)', () => {
    const file = readFileSync(join(__dirname, '../../../test/fixtures/loops/text.jsonl'), 'utf8');
    expect(file).toBe(TEXT_SAMPLES.map((s) => JSON.stringify(s)).join('\n') + '\n');
  });

  it('holds at least 40 looping and 60 legitimate text samples, and tool scripts of both kinds', () => {
    expect(samples.filter((s) => s.expect === 'loop').length).toBeGreaterThanOrEqual(40);
    expect(samples.filter((s) => s.expect === 'legit').length).toBeGreaterThanOrEqual(60);
    const scripts = toolScripts();
    expect(scripts.some((s) => s.expect === 'loop')).toBe(true);
    expect(scripts.some((s) => s.expect === 'progress')).toBe(true);
    for (const s of scripts) for (const c of s.calls) expect(typeof c.result).toBe('string');
  });

  it.each(samples.filter((s) => s.expect === 'legit').map((s) => [s.id, s.text] as const))('legitimate %s never fires', (_id, text) => {
    expect(detect(text)).toBeNull();
    expect(detect(text, 3)).toBeNull();
  });

  it.each(samples.filter((s) => s.expect === 'loop').map((s) => [s.id, s.text] as const))('loop %s is caught within the copies allowed', (_id, text) => {
    const loop = detect(text)!;
    expect(loop).not.toBeNull();
    expect(loop.endChar).toBeLessThanOrEqual(text.length);
    // the copies streamed: the shown count for its period, in prose or in code, never more (the
    // copies after them, up to the loop's, were held back and are dropped)
    const most = Math.max(needed(DEFAULT_CONTENT_LOOP.repeats, DEFAULT_CONTENT_LOOP.minSpan, loop.period), needed(DEFAULT_CONTENT_LOOP.codeRepeats, DEFAULT_CONTENT_LOOP.codeMinSpan, loop.period));
    expect(loop.shownEnd).toBeLessThanOrEqual(loop.endChar);
    expect(loop.shownEnd - loop.atChar).toBeLessThanOrEqual(most * loop.period);
    expect(text.slice(loop.atChar, loop.atChar + loop.period).repeat(loop.repeats)).toBe(text.slice(loop.atChar, loop.atChar + loop.period * loop.repeats));
    expect(detect(text, 5)).toEqual(loop);
  });

  it('the 150-times sentence and every looping prose sentence of 12 characters or more shows at most 10 copies', () => {
    const prose = samples.filter((s) => s.expect === 'loop' && !/^(code block|table)/.test(s.kind));
    const shown = (loop: ContentLoop) => Math.floor((loop.shownEnd - loop.atChar) / loop.period);
    const tooMany = prose.map((s) => ({ id: s.id, loop: detect(s.text)! })).filter(({ loop }) => loop.period >= 12 && shown(loop) > 10);
    expect(tooMany).toEqual([]);
    expect(shown(detect(samples.find((s) => s.id === 'sentence-48x150')!.text)!)).toBeLessThanOrEqual(10);
  });

  it.each(samples.filter((s) => s.expect === 'missed').map((s) => [s.id, s.text] as const))('known miss %s is not caught (documented in the corpus README)', (_id, text) => {
    expect(detect(text)).toBeNull();
  });
});
