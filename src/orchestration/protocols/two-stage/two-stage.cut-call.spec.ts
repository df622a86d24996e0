import { answer, ScriptedLlm, toolTurn, type ScriptedResponse } from '../../../../test/support/scripted-llm';
import { collect, doneOf, ofType, textOf } from '../../../../test/support/protocol-events';
import { MemoryTrace } from '../../../../test/support/memory-trace';
import type { AppConfigService } from '../../../config/app-config.service';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { ToolRunnerService } from '../../../tools/tool-runner.service';
import type { ApprovalDecision } from '../../approvals.port';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { TwoStageStrategy } from './two-stage.strategy';

/**
 * Issue 44, the two-stage side: a turn stores its start (phase 0) before the first model call,
 * and a checkpoint naming its call just before each call runs, so the instance that continues
 * it after its instance died knows where it stood. A call cut off while it ran runs again only
 * when it is read-only; any other gets the outcome `interrupted` (or waits for a person).
 */
const fakeConfig = {
  get: (k: string) => ({ TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536, TOOLS_APPROVAL_DEFAULT: 'destructive' } as Record<string, unknown>)[k],
  list: () => [],
} as unknown as AppConfigService;

const NOTE = 'notes__record';

function setup(script: ScriptedResponse[], over: Partial<ProtocolExecutionContext> = {}, secrets: string[] = []) {
  const trace = new MemoryTrace();
  const runs: string[] = [];
  const registry = new ToolRegistryService(fakeConfig, trace);
  registry.register({
    name: 'read_file',
    description: 'read',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    origin: 'builtin',
    hints: { readOnly: true },
    isAvailable: () => true,
    execute: async (args) => {
      runs.push(`read ${String(args.path)}`);
      return { output: { content: `contents of ${String(args.path)}` } };
    },
  });
  // an MCP tool without readOnlyHint: a side effect that must not run twice
  registry.register({
    name: NOTE,
    description: 'records a note',
    parameters: { type: 'object', properties: { note: { type: 'string' }, token: { type: 'string', 'x-secret': true } }, required: ['note'] },
    origin: 'mcp:notes',
    isAvailable: () => true,
    execute: async (args) => {
      runs.push(`note ${String(args.note)}`);
      return { output: { noted: args.note } };
    },
  });
  const llm = new ScriptedLlm(script);
  const config = { ...fakeConfig, get: (k: string) => (k === 'LLM_API_KEY' ? secrets[0] : fakeConfig.get(k as never)) } as unknown as AppConfigService;
  const ctx: ProtocolExecutionContext = {
    requestId: 'req-1',
    projectId: 'default',
    conversationId: 'conv-1',
    messages: [{ role: 'user', content: 'Do the thing' }],
    mode: 'act',
    llm,
    tools: new ToolRunnerService(registry, config, trace),
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: new AbortController().signal,
    control: { pauseRequested: () => false },
    ...over,
  };
  return { ctx, runs, llm, trace };
}

/** The turn up to the checkpoint stored as its call starts, as the takeover reads it (the instance dies there). */
async function cutAt(tool: string, args: string): Promise<Record<string, unknown>> {
  const first = setup([toolTurn(tool, args)]);
  for await (const e of new TwoStageStrategy().execute(first.ctx)) {
    if (e.type === 'checkpoint' && e.midCall) {
      expect(first.runs).toEqual([]);
      return JSON.parse(JSON.stringify(e.state)) as Record<string, unknown>;
    }
  }
  throw new Error('no checkpoint before the call');
}

const approve: ApprovalDecision = { decision: 'approve', edited: false, by: null };
const takeoverFrom = (state: Record<string, unknown>) => ({ resumeFrom: { phaseIndex: Number(state.phaseIndex), state, takeover: true } });
const llmSaw = (llm: ScriptedLlm, i: number) => llm.requests[i].messages.map((m) => m.content).join('\n');

describe('two-stage: continuing a turn whose instance died', () => {
  it('stores the turn start (phase 0, its base messages) before the first model call; continued from it, the first action phase runs again', async () => {
    const first = setup([answer('Hello.')]);
    const order: string[] = [];
    const events = await collect(new TwoStageStrategy().execute(first.ctx), (e) => order.push(`${e.type}:${first.llm.requests.length}`));
    const start = ofType(events, 'checkpoint')[0];
    expect(order[0]).toBe('checkpoint:0');
    expect(start).toMatchObject({ phaseIndex: 0, state: { phaseIndex: 0, cycleIndex: 0, baseMessages: [{ role: 'user', content: 'Do the thing' }], executed: [] } });
    expect(start.midCall).toBeUndefined();

    const again = setup([answer('Hello again.')], takeoverFrom(JSON.parse(JSON.stringify(start.state))));
    const rest = await collect(new TwoStageStrategy().execute(again.ctx));
    expect(ofType(rest, 'checkpoint')).toEqual([]);
    expect(ofType(rest, 'phase')[0]).toMatchObject({ status: 'start', phase: 'action_phase', phaseIndex: 1 });
    expect(llmSaw(again.llm, 0)).toContain('Do the thing');
    expect(textOf(rest)).toBe('Hello again.');
    expect(doneOf(rest).stopReason).toBe('final_answer');
  });

  it('stores a checkpoint naming the call just before it runs; the one at the phase end names none', async () => {
    const { ctx, runs } = setup([toolTurn('read_file', '{"path":"a.md"}'), answer('Done.')]);
    const order: string[] = [];
    await collect(new TwoStageStrategy().execute(ctx), (e) => {
      if (e.type === 'checkpoint') order.push(`${e.phaseIndex}:${e.midCall ? 'mid' : 'end'}:${e.state.runningCall ? 'call' : '-'}:${runs.length}`);
    });
    expect(order).toEqual(['0:end:-:0', '2:mid:call:0', '2:end:-:1']);
  });

  it('a read-only call cut off runs again, once, and the turn completes with its result', async () => {
    const state = await cutAt('read_file', '{"path":"a.md"}');
    expect(state.runningCall).toMatchObject({ call: { name: 'read_file', arguments: '{"path":"a.md"}' } });
    const { ctx, runs, llm } = setup([answer('It says hi.')], takeoverFrom(state));
    const events = await collect(new TwoStageStrategy().execute(ctx));
    expect(runs).toEqual(['read a.md']);
    expect(ofType(events, 'tool_progress').at(-1)).toMatchObject({ action: 'completed', outcome: 'success' });
    expect(llmSaw(llm, 0)).toContain('[Tool result #1 — read_file {"path":"a.md"} — success]');
    expect(ofType(events, 'phase').map((p) => `${p.status} ${p.phase} ${p.phaseIndex}`)).toEqual(['end tool_phase 2', 'start action_phase 3', 'end action_phase 3']);
    expect(doneOf(events).stopReason).toBe('final_answer');
  });

  it('any other call cut off is not run again: the model reads `interrupted` as its result, traced like any call, and the turn goes on', async () => {
    const state = await cutAt(NOTE, '{"note":"n1"}');
    const { ctx, runs, llm, trace } = setup([answer('I could not confirm the note.')], takeoverFrom(state));
    const events = await collect(new TwoStageStrategy().execute(ctx));
    expect(runs).toEqual([]);
    expect(ofType(events, 'tool_progress').at(-1)).toMatchObject({ action: 'failed', outcome: 'interrupted', isError: true, callId: 'call_0_notes__record' });
    expect(llmSaw(llm, 0)).toContain(`[Tool result #1 — ${NOTE} {"note":"n1"} — interrupted (it may or may not have run; it was not run again)]`);
    expect(trace.ofType('tool_result').map((r) => r.details)).toEqual([expect.objectContaining({ callId: 'call_0_notes__record', outcome: 'interrupted' })]);
    // the checkpoint at the phase end keeps it as executed: the same call asked again is refused, never run
    expect(ofType(events, 'checkpoint').at(-1)!.state).toMatchObject({ executed: [{ name: NOTE, outcome: 'interrupted' }] });
    expect(ofType(events, 'phase')[1]).toMatchObject({ status: 'start', phase: 'action_phase', phaseIndex: 3 });
    expect(doneOf(events).stopReason).toBe('final_answer');
  });

  it('a cut-off call that needs approval waits for a person (reason `interrupted`): approved it runs once, declined it does not', async () => {
    const state = await cutAt(NOTE, '{"note":"n2"}');
    for (const [decision, ran] of [[approve, ['note n2']], [{ decision: 'deny', reason: 'already done', by: 'k1', edited: false } as ApprovalDecision, []]] as const) {
      const awaited: string[] = [];
      const { ctx, runs } = setup([answer('OK.')], { ...takeoverFrom(state), approvals: { setting: 'policy', await: async (id) => (awaited.push(id), decision) } });
      const events = await collect(new TwoStageStrategy().execute(ctx));
      expect(ofType(events, 'approval_required')).toEqual([expect.objectContaining({ tool: NOTE, reason: 'interrupted', approvalId: awaited[0] })]);
      expect(runs).toEqual(ran);
      expect(doneOf(events).stopReason).toBe('final_answer');
    }
  });

  it('a read-only call whose arguments were masked (a secret is never stored) cannot run again: interrupted', async () => {
    const first = setup([toolTurn('read_file', '{"path":"s3cr3t-value-123"}')], {}, ['s3cr3t-value-123']);
    let state: Record<string, unknown> | undefined;
    const seen: ProtocolEvent[] = [];
    for await (const e of new TwoStageStrategy().execute(first.ctx)) {
      seen.push(e);
      if (e.type === 'checkpoint' && e.midCall) {
        state = JSON.parse(JSON.stringify(e.state)) as Record<string, unknown>;
        break;
      }
    }
    expect(JSON.stringify(state)).not.toContain('s3cr3t-value-123');
    expect(state!.runningCall).toMatchObject({ masked: true });
    const { ctx, runs } = setup([answer('OK.')], takeoverFrom(state!));
    const events = await collect(new TwoStageStrategy().execute(ctx));
    expect(runs).toEqual([]);
    expect(ofType(events, 'tool_progress').at(-1)).toMatchObject({ outcome: 'interrupted' });
  });
});
