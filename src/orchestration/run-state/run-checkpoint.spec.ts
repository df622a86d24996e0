import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { answer, ScriptedLlm, toolTurn } from '../../../test/support/scripted-llm';
import { MemoryTrace } from '../../../test/support/memory-trace';
import type { ToolRunner } from '../../tools/tool-runner.port';
import type { ProtocolEvent } from '../protocol-event';
import { TwoStageStrategy } from '../protocols/two-stage/two-stage.strategy';
import { CheckpointFormatError, parseTwoStageCheckpoint, TWO_STAGE_CHECKPOINT_VERSION } from './run-checkpoint';

/**
 * Stored checkpoints are data that outlives a release: every historical fixture must still be
 * readable (and resumable) by this build, and every broken one must be refused with a reason,
 * never half-read. Add a fixture when the format changes; never edit an old one.
 */
const DIR = join(__dirname, '..', '..', '..', 'test', 'fixtures', 'run-checkpoints');
const load = (sub: string) => readdirSync(join(DIR, sub)).filter((f) => f.endsWith('.json')).map((f) => [f, JSON.parse(readFileSync(join(DIR, sub, f), 'utf8'))] as const);

describe('two-stage checkpoint format', () => {
  it('is version 1 in this build', () => {
    expect(TWO_STAGE_CHECKPOINT_VERSION).toBe(1);
  });

  it.each(load('historical'))('reads the stored checkpoint %s', (_name, raw) => {
    const c = parseTwoStageCheckpoint(raw);
    expect(c.phaseIndex).toBe(raw.phaseIndex);
    expect(c.executed.map((e) => e.signature)).toEqual(raw.executed.map((e: { signature: string }) => e.signature));
    expect(c.usage.llmCalls).toBe(raw.usage?.llmCalls ?? 0);
  });

  it.each(load('historical'))('resumes %s without re-running what it executed', async (_name, raw) => {
    const runs: string[] = [];
    const tools: ToolRunner = {
      run: async (call) => {
        runs.push(call.name);
        return { toolName: call.name, args: {}, outcome: 'success', output: {}, outputText: '{}', truncated: false, isError: false, latencyMs: 0, sources: [], signature: null };
      },
      signature: () => null,
      specs: async () => [],
      redactArgs: (_n, a) => a,
    };
    const llm = new ScriptedLlm([answer('Resumed.')]);
    const events: ProtocolEvent[] = [];
    for await (const e of new TwoStageStrategy().execute({
      requestId: 'r',
      projectId: 'default',
      conversationId: 'c',
      messages: [],
      mode: 'act',
      llm,
      tools,
      trace: new MemoryTrace(),
      budgets: { maxPhaseCycles: 5, maxDuplicateAttempts: 3, maxIterations: 10 },
      debugShowToolResults: false,
      signal: new AbortController().signal,
      control: { pauseRequested: () => false },
      resumeFrom: { phaseIndex: raw.phaseIndex, state: raw },
    })) events.push(e);
    expect(runs).toEqual([]);
    expect(events.find((e) => e.type === 'phase')).toMatchObject({ phaseIndex: raw.phaseIndex + 1 });
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'final_answer' });
    // the model saw what the checkpoint carried
    const sent = llm.requests[0].messages.map((m) => m.content).join('\n');
    for (const m of [...raw.injected, ...raw.baseMessages]) expect(sent).toContain(m.content);
  });

  it.each(load('negative'))('refuses the broken checkpoint %s with a reason', (_name, raw) => {
    expect(() => parseTwoStageCheckpoint(raw)).toThrow(CheckpointFormatError);
  });

  it('keeps the sources a checkpoint carries (optional: older ones have none); a malformed snapshot is dropped, not fatal', () => {
    const [, raw] = load('historical')[0];
    expect(parseTwoStageCheckpoint(raw).sources).toBeUndefined();
    const sources = { data: [{ type: 'rag', title: 'Roadmap', path: 'docs/roadmap.md' }], confidences: ['medium'], ragCalls: 1, metrics: { returned: 1 } };
    expect(parseTwoStageCheckpoint({ ...raw, sources }).sources).toEqual(sources);
    for (const bad of [[], { data: 'x', confidences: [], ragCalls: 0 }, { data: [], confidences: [1], ragCalls: 0 }, { data: [], confidences: [], ragCalls: -1 }]) {
      expect(parseTwoStageCheckpoint({ ...raw, sources: bad }).sources).toBeUndefined();
    }
  });

  it('keeps the token budget\'s measure of the last prompt, so a resumed or forked run counts its next prompt as the provider does (older checkpoints have none)', () => {
    const [, raw] = load('historical')[0];
    expect(parseTwoStageCheckpoint(raw).promptGauge).toBeUndefined();
    const c = parseTwoStageCheckpoint({ ...raw, usage: { ...(raw.usage ?? {}), largestPromptTokens: 9000 }, promptGauge: { estimated: 2250, reported: 9000 } });
    expect(c.promptGauge).toEqual({ estimated: 2250, reported: 9000 });
    expect(c.usage.largestPromptTokens).toBe(9000);
    for (const bad of ['x', { estimated: -1 }, { reported: 5 }]) expect(parseTwoStageCheckpoint({ ...raw, promptGauge: bad }).promptGauge).toBeUndefined();
  });

  it('keeps a resumed turn inside its remaining budget', async () => {
    const [, raw] = load('historical').find(([n]) => n === 'v1-with-history-and-strikes.json')!;
    const llm = new ScriptedLlm([toolTurn('read_file', '{"path":"docs/roadmap.md"}'), answer('Final.')]);
    const runs: string[] = [];
    const tools: ToolRunner = {
      run: async (call) => {
        runs.push(call.name);
        return { toolName: call.name, args: {}, outcome: 'success', output: {}, outputText: '{}', truncated: false, isError: false, latencyMs: 0, sources: [], signature: null };
      },
      signature: (call) => `${call.name}:${JSON.stringify(call.arguments)}`,
      specs: async () => [{ name: 'read_file', description: 'read', parameters: { type: 'object' } }],
      redactArgs: (_n, a) => a,
    };
    const events: ProtocolEvent[] = [];
    for await (const e of new TwoStageStrategy().execute({
      requestId: 'r', projectId: 'default', conversationId: 'c', messages: [], mode: 'act', llm, tools, trace: new MemoryTrace(),
      budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 }, debugShowToolResults: false,
      signal: new AbortController().signal, control: { pauseRequested: () => false }, resumeFrom: { phaseIndex: 6, state: raw },
    })) events.push(e);
    // two tools had run before the pause: one more reaches the cycle budget of 3
    expect(runs).toEqual(['read_file']);
    expect(events.filter((e) => e.type === 'notice').map((e) => (e as { code: string }).code)).toEqual(['cycle_budget_reached']);
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'cycle_budget' });
  });
});
