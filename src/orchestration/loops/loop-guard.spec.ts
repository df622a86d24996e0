import { callTool, finish, say } from '../../../test/support/scripted-llm';
import { modelStep } from '../../../test/support/model-step';
import type { LlmStreamEvent } from '../../llm/llm-adapter.port';
import { forcedFinal } from '../protocols/two-stage/two-stage.loop-budgets';
import { parseTwoStageCheckpoint, TWO_STAGE_CHECKPOINT_VERSION } from '../run-state/run-checkpoint';
import { progressDigest } from '../tool-call-guard';
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
    expect(res.text.length).toBe(res.loop!.endChar);
    const copies = res.text.split(SENTENCE.trim()).length - 1;
    expect(copies).toBeLessThanOrEqual(DEFAULT_CONTENT_LOOP.repeats + 1);
    expect(copies).toBeGreaterThanOrEqual(DEFAULT_CONTENT_LOOP.repeats - 1);
    // the adapter was not read to its end
    expect(llm.consumed[0]).toBeLessThan(events.length / 2);
    expect(res.error).toBeUndefined();
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
