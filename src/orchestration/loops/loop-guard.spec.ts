import { callTool, finish, say } from '../../../test/support/scripted-llm';
import { modelStep } from '../../../test/support/model-step';
import type { LlmStreamEvent } from '../../llm/llm-adapter.port';
import { forcedFinal } from '../protocols/two-stage/two-stage.loop-budgets';
import { parseTwoStageCheckpoint, TWO_STAGE_CHECKPOINT_VERSION } from '../run-state/run-checkpoint';
import { progressDigest } from './result-progress';
import { AFTER_LOOP } from '../protocols/prompts';
import { DEFAULT_CONTENT_LOOP } from './content-loop';
import { contentLoopSettings } from './loop-settings';

const SENTENCE = 'Restart the server and clear the cache before you try again. ';

const step = modelStep;

/** Splits a text into deltas of `size` characters, as a model streams it. */
const deltas = (text: string, size: number) => say(...Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size)));

describe('content loops in ModelStream', () => {
  it.each([1, 5, 13, 64])('stops a sentence repeated 150 times (deltas of %i chars): what streamed is exactly the answer text, upstream is not read further', async (size) => {
    const events = [...deltas('Sure. ' + SENTENCE.repeat(150), size), finish('stop')];
    const { chunks, res, llm } = await step(events, { stopAtFirstCompleteCall: false });
    expect(res.loop).toMatchObject({ in: 'text', period: SENTENCE.length });
    expect(chunks.join('')).toBe(res.text);
    // the shown copies stream; the ones held back after them, up to the loop's, are dropped
    expect(res.text.length).toBe(res.loop!.shownEnd);
    expect(res.loop!.endChar).toBeGreaterThan(res.loop!.shownEnd);
    const copies = res.text.split(SENTENCE.trim()).length - 1;
    expect(copies).toBeLessThanOrEqual(DEFAULT_CONTENT_LOOP.repeats + 1);
    expect(copies).toBeGreaterThanOrEqual(DEFAULT_CONTENT_LOOP.repeats - 1);
    // the adapter was not read to its end
    expect(llm.consumed[0]).toBeLessThan(events.length / 2);
    expect(res.error).toBeUndefined();
  });

  it.each([
    ['ten identical log lines', 'Here is the log:\n' + '2024-05-01 12:00:00 WARN connection reset by peer, retrying\n'.repeat(10) + 'Then it recovered.'],
    ['thirty identical bullets', 'Checklist:\n' + '- Run the migration check and confirm the result.\n'.repeat(30) + 'That is all.'],
    ['a line asked for ten times', 'All work and no play makes Jack a dull boy. '.repeat(10) + 'Done.'],
    ['twelve stack frames', 'RangeError: Maximum call stack size exceeded\n' + '    at walk (/app/src/tree.js:42:11)\n'.repeat(12) + 'The recursion never ends.'],
  ])('a repetition short of a loop streams whole, in order (%s): the copies held back follow once it stops', async (_what, text) => {
    const { chunks, res } = await step([...deltas(text, 7), finish('stop')]);
    expect(res.loop).toBeUndefined();
    expect(chunks.join('')).toBe(text);
    expect(res.text).toBe(text);
  });

  it('a repetition still running when the response ends streams whole at its end', async () => {
    const text = 'Row, row, row your boat. '.repeat(12);
    const { chunks, res } = await step([...deltas(text, 5), finish('stop')]);
    expect(res.loop).toBeUndefined();
    expect(chunks.join('')).toBe(text);
  });

  it('the call after a loop shows one copy of a passage it loops on (AFTER_LOOP), and streams a clean answer whole', async () => {
    const { chunks, res } = await step([...deltas('Sorry. ' + SENTENCE.repeat(150), 9), finish('stop')], AFTER_LOOP);
    expect(res.loop?.in).toBe('text');
    expect(chunks.join('')).toBe(res.text);
    // one copy (a rotation of the passage may end it a character or two early)
    const body = SENTENCE.trim().slice(0, -1);
    expect(res.text.startsWith('Sorry. ' + body)).toBe(true);
    expect(res.text.split(body).length - 1).toBe(1);
    const clean = 'Restart the server, then clear the cache. That fixes it for good.';
    const ok = await step([...deltas(clean, 4), finish('stop')], AFTER_LOOP);
    expect(ok.chunks.join('')).toBe(clean);
  });

  it('drops the calls of a response it stopped at a loop: a looping response is not acted on', async () => {
    const events = [...callTool(0, 'read_file', '{"path":"a.md"}'), ...deltas(SENTENCE.repeat(40), 9), finish('tool_calls')];
    const { res } = await step(events, { stopAtFirstCompleteCall: false });
    expect(res.loop?.in).toBe('text');
    expect(res.calls).toEqual([]);
  });

  it('stops looping reasoning without streaming any of it', async () => {
    const events: LlmStreamEvent[] = [...Array.from({ length: 120 }, () => ({ type: 'reasoning-delta' as const, text: 'Hmm, let me re-check the cache. ' })), ...say('never streamed'), finish('stop')];
    const { chunks, res } = await step(events);
    expect(res.loop?.in).toBe('reasoning');
    expect(chunks).toEqual([]);
    expect(res.text).toBe('');
  });

  it('streams a long answer without repetition whole, and with LOOP_CONTENT_REPEATS=0 even a loop', async () => {
    const list = Array.from({ length: 30 }, (_, i) => `${i + 1}. Step ${i + 1}: check item ${i + 1}.\n`).join('');
    const plain = await step([...deltas(list, 6), finish('stop')]);
    expect(plain.res.loop).toBeUndefined();
    expect(plain.chunks.join('')).toBe(list);
    const off = await step([...deltas(SENTENCE.repeat(50), 8), finish('stop')], { contentLoop: contentLoopSettings(0) });
    expect(off.res.loop).toBeUndefined();
    expect(off.res.text).toBe(SENTENCE.repeat(50));
  });
});

describe('the no-progress rule', () => {
  it('compares results as the model reads them: JSON key order and white space do not matter, their content does', () => {
    const a = progressDigest({ outcome: 'success', outputText: '{"path":"docs","entries":[{"name":"a.md"}]}' });
    expect(progressDigest({ outcome: 'success', outputText: '{ "entries": [ { "name": "a.md" } ], "path": "docs" }' })).toBe(a);
    expect(progressDigest({ outcome: 'success', outputText: '{"path":"docs","entries":[{"name":"b.md"}]}' })).not.toBe(a);
    expect(progressDigest({ outcome: 'success', outputText: 'two  words\n' })).toBe(progressDigest({ outcome: 'success', outputText: 'two words' }));
  });

  it('says nothing of empty results, and of results the tool did not give (declined, cancelled, waiting)', () => {
    for (const outputText of ['', '""', '{}', '[]', 'null', '   ']) expect(progressDigest({ outcome: 'success', outputText })).toBeUndefined();
    for (const outcome of ['denied', 'cancelled', 'approval_required', 'timeout', 'validation_error'] as const) expect(progressDigest({ outcome, outputText: '{"a":1}' })).toBeUndefined();
  });

  it('names the kind of strike that spent the budget as the forced reason, and a checkpoint keeps it', () => {
    const limits = { maxPhaseCycles: 10, maxDuplicateAttempts: 3 };
    expect(forcedFinal({ executedTools: 4, duplicateStrikes: 3, lastStrike: 'no_progress' }, limits)).toBe('no_progress');
    expect(forcedFinal({ executedTools: 4, duplicateStrikes: 3, lastStrike: 'repeat' }, limits)).toBe('duplicate_limit');
    expect(forcedFinal({ executedTools: 4, duplicateStrikes: 3 }, limits)).toBe('duplicate_limit');
    expect(forcedFinal({ executedTools: 4, duplicateStrikes: 2, lastStrike: 'no_progress' }, limits)).toBeNull();
    const base = { schemaVersion: TWO_STAGE_CHECKPOINT_VERSION, phaseIndex: 2, cycleIndex: 1, baseMessages: [], injected: [], executed: [], duplicateStrikes: 1, toldInvalid: [], usage: {} };
    expect(parseTwoStageCheckpoint({ ...base, lastStrike: 'no_progress' }).lastStrike).toBe('no_progress');
    // an older checkpoint, or a value this build does not know, reads as before
    expect(parseTwoStageCheckpoint(base).lastStrike).toBeUndefined();
    expect(parseTwoStageCheckpoint({ ...base, lastStrike: 'bogus' }).lastStrike).toBeUndefined();
  });
});
