import { unwrapUntrustedBlock } from '../../../common/util/untrusted-block';
import { answer, callTool, finish, ScriptedLlm, toolTurn, type ScriptedResponse } from '../../../../test/support/scripted-llm';
import { collect, doneOf, ofType, textOf } from '../../../../test/support/protocol-events';
import { MemoryTrace } from '../../../../test/support/memory-trace';
import type { AppConfigService } from '../../../config/app-config.service';
import type { RepeatPolicy, ToolDefinition, ToolExecuteResult } from '../../../tools/tool-definition';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { ToolRunnerService } from '../../../tools/tool-runner.service';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { CheckpointFormatError } from '../../run-state/run-checkpoint';
import { parseUnifiedCheckpoint, type UnifiedCheckpoint } from '../../run-state/unified-checkpoint';
import { UnifiedStrategy } from './unified.strategy';

/*
 * Issue 44: a unified turn stores a checkpoint before its first model call and after each
 * completed tool step; a turn continued from one (another instance, after its own died) goes
 * on with the next model call, knowing what the steps before it ran and returned.
 */

const fakeConfig = { get: (k: string) => (({ TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536 }) as Record<string, unknown>)[k], list: () => [] } as unknown as AppConfigService;

function tools(trace: MemoryTrace) {
  const ran: string[] = [];
  const registry = new ToolRegistryService(fakeConfig, trace);
  const def = (name: string, exec: (a: Record<string, unknown>) => ToolExecuteResult, repeat?: RepeatPolicy, origin: ToolDefinition['origin'] = 'builtin'): ToolDefinition => ({
    name,
    description: `${name} tool`,
    // the token parameter is secret: the stream (and a checkpoint) shows it masked
    parameters: { type: 'object', properties: { path: { type: 'string' }, token: { type: 'string', 'x-secret': true } }, additionalProperties: false },
    origin,
    isAvailable: () => true,
    ...(repeat ? { repeat } : {}),
    execute: async (a) => {
      ran.push(`${name} ${String(a.path)}`);
      return exec(a);
    },
  });
  registry.register(def('read_file', (a) => ({ output: { path: a.path, content: `contents of ${String(a.path)}` } })));
  registry.register(def('web_search', () => ({ output: { results: ['a'] }, sources: [{ type: 'web', title: 'A', url: 'https://a.example/', snippet: 'a' }] })));
  registry.register(def('status', () => ({ output: { up: true } }), 'rerun'));
  // an MCP tool without readOnlyHint: it has a side effect, and must never run twice
  registry.register(def('send_mail', () => ({ output: { sent: true } }), undefined, 'mcp:mail'));
  return { runner: new ToolRunnerService(registry, fakeConfig, trace), ran };
}

function setup(script: ScriptedResponse[], resumeFrom?: ProtocolExecutionContext['resumeFrom']) {
  const trace = new MemoryTrace();
  const { runner, ran } = tools(trace);
  const llm = new ScriptedLlm(script);
  const ctx: ProtocolExecutionContext = {
    requestId: 'req-1',
    projectId: 'default',
    conversationId: 'conv-1',
    messages: [{ role: 'user', content: 'Read the notes' }],
    mode: 'act',
    llm,
    tools: runner,
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: new AbortController().signal,
    control: { pauseRequested: () => false },
    flags: { orchestratorEnabled: true },
    ...(resumeFrom ? { resumeFrom } : {}),
  };
  return { ctx, llm, ran, trace };
}

const checkpoints = (events: ProtocolEvent[]) => ofType(events, 'checkpoint');
/** as the run row stores it (jsonb) and the taker reads it back */
const stored = (e: Extract<ProtocolEvent, { type: 'checkpoint' }>) => JSON.parse(JSON.stringify(e.state)) as Record<string, unknown>;

describe('unified step checkpoints', () => {
  const strategy = new UnifiedStrategy();

  it('continues from checkpoints (a takeover) but has no pause point (no pause, resume or fork route)', () => {
    expect(strategy.capabilities).toMatchObject({ resume: true, pausePoints: false });
  });

  it('stores one at phase 0 before the first model call, one as a response asks for tools and one after each completed tool step, each right after the events it follows', async () => {
    const { ctx } = setup([toolTurn('read_file', '{"path":"a.md","token":"s3cret"}', 'Reading. '), toolTurn('web_search', '{"path":"q"}'), answer('Done.')]);
    const events = await collect(strategy.execute(ctx));
    expect(checkpoints(events).map((c) => c.phaseIndex)).toEqual([0, 1, 2, 3, 4]);
    // the one of the action phase: after its tool_calls and the tool phase's start edge, before any call; it holds the response
    const a = events.indexOf(checkpoints(events)[1]);
    expect(events[a - 2]).toMatchObject({ type: 'tool_calls' });
    expect(events[a - 1]).toMatchObject({ type: 'phase', status: 'start', phase: 'tool_phase', phaseIndex: 2 });
    expect(events[a + 1]).toMatchObject({ type: 'tool_progress', action: 'calling' });
    expect(parseUnifiedCheckpoint(stored(checkpoints(events)[1])).pending).toMatchObject({ text: 'Reading. ', calls: [{ name: 'read_file', exact: false }], invalid: [] });
    // the step's: after the end edge of the tool phase it closes, before the next action phase opens
    const i = events.indexOf(checkpoints(events)[2]);
    expect(events[i - 1]).toMatchObject({ type: 'phase', status: 'end', phase: 'tool_phase', phaseIndex: 2 });
    expect(events[i + 1]).toMatchObject({ type: 'phase', status: 'start', phase: 'action_phase', phaseIndex: 3 });
    const c = parseUnifiedCheckpoint(stored(checkpoints(events)[4]));
    expect(c.pending).toBeUndefined();
    expect(c).toMatchObject({ phaseIndex: 4, cycleIndex: 2, modelSteps: 2, duplicateStrikes: 0, contentLoops: 0, wrote: true, baseMessages: ctx.messages });
    expect(c.steps.map((s) => s.tools.map((t) => t.name))).toEqual([['read_file'], ['web_search']]);
    expect(c.executed.map((e) => e.name)).toEqual(['read_file', 'web_search']);
    expect(c.sources.data).toHaveLength(1);
    expect(c.usage).toMatchObject({ llmCalls: 2, totalTokens: 30 });
    // no secret argument is stored: the call's arguments as the stream shows them
    expect(JSON.stringify(c)).not.toContain('s3cret');
    expect(JSON.parse(c.steps[0].assistant.toolCalls![0].arguments)).toMatchObject({ path: 'a.md', token: expect.not.stringContaining('s3cret') });
    // the round trip: what is stored reads back as it was written
    expect(parseUnifiedCheckpoint(stored(checkpoints(events)[4]))).toEqual(c);
    expect(strategy.readCheckpoint(stored(checkpoints(events)[4]))).toEqual({ baseMessages: ctx.messages, answersStartedCalls: false, checkpointsEachCall: false });
    expect(strategy.readCheckpoint(stored(checkpoints(events)[3]))).toEqual({ baseMessages: ctx.messages, answersStartedCalls: true, checkpointsEachCall: false });
  });

  it('continued from a step checkpoint: the next model call reads the steps before it, nothing runs again, usage and sources go on', async () => {
    const first = setup([toolTurn('read_file', '{"path":"a.md"}', 'Reading. '), toolTurn('web_search', '{"path":"q"}'), answer('lost')]);
    const events = await collect(strategy.execute(first.ctx));
    const at2 = checkpoints(events).find((c) => c.phaseIndex === 2)!;

    // the dead instance's step 2 is lost: the taker goes on from phase 2 with the next model call
    const next = setup([toolTurn('read_file', '{"path":"a.md"}'), toolTurn('web_search', '{"path":"q"}'), answer('The notes say a.')], { phaseIndex: 2, state: stored(at2), takeover: true });
    const out = await collect(strategy.execute(next.ctx));
    expect(ofType(out, 'phase')[0]).toMatchObject({ status: 'start', phase: 'action_phase', phaseIndex: 3, cycleIndex: 1 });
    // the first model call sees the completed step (assistant call and its tool result)
    const msgs = next.llm.requests[0].messages;
    expect(msgs.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(msgs[3].content).toContain('contents of a.md');
    // the repeat of the step that ran elsewhere is refused (a strike), not run; the new search runs
    expect(next.ran).toEqual(['web_search q']);
    expect(ofType(out, 'notice').map((n) => n.code)).toContain('duplicate_tool_call');
    expect(textOf(out)).toBe('\n\nThe notes say a.');
    expect(doneOf(out)).toMatchObject({ stopReason: 'final_answer', usage: { llmCalls: 4 } });
    expect(ofType(out, 'sources')).toHaveLength(1);
    expect(checkpoints(out).map((c) => c.phaseIndex)).toEqual([3, 4, 5, 6]);
    expect(next.trace.ofType('unified_mode')[0].details).toMatchObject({ mode: 'agentic', reason: 'continued', resumedFromPhaseIndex: 2 });
  });

  it('continued from phase 0: the turn starts again (nothing ran), without storing phase 0 again', async () => {
    const first = setup([answer('x')]);
    const at0 = checkpoints(await collect(strategy.execute(first.ctx)))[0];
    const again = setup([toolTurn('read_file', '{"path":"b.md"}'), answer('B.')], { phaseIndex: 0, state: stored(at0), takeover: true });
    const out = await collect(strategy.execute(again.ctx));
    expect(again.ran).toEqual(['read_file b.md']);
    expect(textOf(out)).toBe('B.');
    expect(checkpoints(out).map((c) => c.phaseIndex)).toEqual([1, 2]);
    expect(doneOf(out)).toMatchObject({ stopReason: 'final_answer', usage: { llmCalls: 2 } });
  });

  it('a rerun tool restored from a checkpoint is compared by its result digest: the same result again is a strike', async () => {
    const first = setup([toolTurn('status', '{"path":"x"}'), answer('lost')]);
    const at2 = checkpoints(await collect(strategy.execute(first.ctx))).find((c) => c.phaseIndex === 2)!;
    const next = setup([toolTurn('status', '{"path":"x"}'), answer('Up.')], { phaseIndex: 2, state: stored(at2), takeover: true });
    const out = await collect(strategy.execute(next.ctx));
    expect(next.ran).toEqual(['status x']);
    expect(parseUnifiedCheckpoint(stored(checkpoints(out).find((c) => c.phaseIndex === 4)!)).duplicateStrikes).toBe(1);
  });

  /** A turn whose first response asks for `calls` (one step), stopped at the checkpoint before they run: that checkpoint. */
  async function beforeCalls(...calls: Array<[string, string]>) {
    const first = setup([[...calls.flatMap(([name, args], i) => callTool(i, name, args)), finish('tool_calls')], answer('lost')]);
    const events = await collect(strategy.execute(first.ctx));
    return { state: stored(checkpoints(events).find((c) => c.phaseIndex === 1)!), ids: ofType(events, 'tool_calls')[0].calls.map((c) => c.id) };
  }

  it('continued from the checkpoint before a step’s calls: the calls the dead instance had not started run; of those it had, read-only ones run again and the others are answered as cut off, never run', async () => {
    const { state, ids } = await beforeCalls(['read_file', '{"path":"a.md"}'], ['send_mail', '{"path":"boss"}'], ['send_mail', '{"path":"team"}']);
    // the dead instance had started the read and the first mail; the second mail had not started
    const next = setup([toolTurn('send_mail', '{"path":"boss"}'), answer('Sent to the team; the mail to your boss may not have gone out.')], { phaseIndex: 1, state, takeover: true, startedCalls: [ids[0], ids[1]] });
    const out = await collect(strategy.execute(next.ctx));
    expect(next.ran).toEqual(['read_file a.md', 'send_mail team']);
    // the step is not shown again: its tool phase opens at once, with the phase numbers it had
    expect(out[0]).toMatchObject({ type: 'phase', status: 'start', phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 });
    expect(ofType(out, 'tool_calls')).toHaveLength(1);
    expect(ofType(out, 'notice').filter((n) => n.code === 'tool_interrupted')).toHaveLength(1);
    expect(ofType(out, 'tool_progress').find((p) => p.callId === ids[1])).toMatchObject({ action: 'refused' });
    const tools = next.llm.requests[0].messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.toolCallId)).toEqual(ids);
    expect(JSON.parse(unwrapUntrustedBlock(tools[1].content!))).toMatchObject({ interrupted: true, tool: 'send_mail' });
    // the model asking for the cut-off mail again is refused (it may have gone out), not run
    expect(ofType(out, 'notice').map((n) => n.code)).toContain('duplicate_tool_call');
    expect(doneOf(out)).toMatchObject({ stopReason: 'final_answer' });
  });

  it('continued from the checkpoint before a step’s calls that nothing had started (handed over there): every call runs once', async () => {
    const { state } = await beforeCalls(['send_mail', '{"path":"boss"}']);
    const next = setup([answer('Sent.')], { phaseIndex: 1, state, takeover: true });
    const out = await collect(strategy.execute(next.ctx));
    expect(next.ran).toEqual(['send_mail boss']);
    expect(ofType(out, 'notice')).toEqual([]);
    expect(textOf(out)).toBe('Sent.');
  });

  it('a started read-only call whose arguments were masked in the checkpoint is not run again with them: answered as cut off', async () => {
    const { state, ids } = await beforeCalls(['read_file', '{"path":"a.md","token":"s3cret"}']);
    const next = setup([answer('Could not read it.')], { phaseIndex: 1, state, takeover: true, startedCalls: ids });
    await collect(strategy.execute(next.ctx));
    expect(next.ran).toEqual([]);
  });

  it('refuses a checkpoint it cannot read, naming the problem', () => {
    const good = { schemaVersion: 1, protocol: 'unified', phaseIndex: 2, cycleIndex: 1, modelSteps: 1, baseMessages: [], steps: [], executed: [], results: [], sources: { data: [], confidences: [], ragCalls: 0 }, duplicateStrikes: 0, contentLoops: 0, wrote: false, usage: {} } satisfies Record<Exclude<keyof UnifiedCheckpoint, 'lastStrike' | 'pending' | 'awaiting' | 'promptGauge'>, unknown>;
    expect(parseUnifiedCheckpoint(good)).toMatchObject({ phaseIndex: 2, usage: { llmCalls: 0 } });
    for (const [bad, why] of [
      [{ ...good, schemaVersion: 3 }, /schemaVersion 3/],
      // version 2 is the checkpoint of a step awaiting a person, and only that one
      [{ ...good, schemaVersion: 2 }, /awaits a person/],
      [{ ...good, awaiting: { ran: [], asked: [], cutOff: [] } }, /awaits a person/],
      [{ ...good, schemaVersion: 2, awaiting: { ran: [], asked: [{ callId: 'c' }], cutOff: [] } }, /awaiting must be/],
      [{ ...good, protocol: undefined }, /not a unified checkpoint/],
      [{ ...good, phaseIndex: -1 }, /phaseIndex/],
      [{ ...good, steps: [{ assistant: { role: 'robot', content: '' }, tools: [] }] }, /steps/],
      [{ ...good, executed: [{ digest: 'd' }] }, /executed/],
      [{ ...good, sources: null }, /sources/],
    ] as const) {
      expect(() => parseUnifiedCheckpoint(bad)).toThrow(CheckpointFormatError);
      expect(() => strategy.readCheckpoint(bad)).toThrow(why);
    }
  });
});
