import { answer, ScriptedLlm, toolTurn, type ScriptedResponse } from '../../../../test/support/scripted-llm';
import { collect, doneOf, ofType } from '../../../../test/support/protocol-events';
import { MemoryTrace } from '../../../../test/support/memory-trace';
import type { AppConfigService } from '../../../config/app-config.service';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { ToolRunnerService } from '../../../tools/tool-runner.service';
import type { ApprovalDecision } from '../../approvals.port';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { TwoStageStrategy } from './two-stage.strategy';

const fakeConfig = {
  get: (k: string) => ({ TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536, TOOLS_APPROVAL_DEFAULT: 'destructive' } as Record<string, unknown>)[k],
  list: () => [],
} as unknown as AppConfigService;

/** A turn whose every call waits for a person (setting `always`); `decide` answers each await in turn. */
function setup(script: ScriptedResponse[], decide: (approvalId: string) => ApprovalDecision, over: Partial<ProtocolExecutionContext> = {}) {
  const trace = new MemoryTrace();
  const executions: string[] = [];
  const registry = new ToolRegistryService(fakeConfig, trace);
  registry.register({
    name: 'read_file',
    description: 'read',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (args) => {
      executions.push(String(args.path));
      return { output: { content: `contents of ${String(args.path)}` } };
    },
  });
  const awaited: string[] = [];
  const ctx: ProtocolExecutionContext = {
    requestId: 'req-1',
    projectId: 'default',
    conversationId: 'conv-1',
    messages: [{ role: 'user', content: 'Read the roadmap' }],
    mode: 'act',
    llm: new ScriptedLlm(script),
    tools: new ToolRunnerService(registry, fakeConfig, trace),
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: new AbortController().signal,
    control: { pauseRequested: () => false },
    approvals: {
      setting: 'always',
      await: async (id) => {
        awaited.push(id);
        return decide(id);
      },
    },
    ...over,
  };
  return { ctx, executions, awaited };
}

const approve: ApprovalDecision = { decision: 'approve', edited: false, by: null };

describe('two-stage approvals', () => {
  it('asks before the call (checkpoint with the pending call, then approval_required), runs it once when approved', async () => {
    const { ctx, executions, awaited } = setup([toolTurn('read_file', '{"path":"a.md"}'), answer('Done.')], () => approve);
    const events = await collect(new TwoStageStrategy().execute(ctx));
    const types = events.map((e) => e.type);
    expect(types.indexOf('checkpoint')).toBeLessThan(types.indexOf('approval_required'));
    expect(types.indexOf('approval_required')).toBeLessThan(types.indexOf('approval_decided'));
    const cp = ofType(events, 'checkpoint').find((c) => c.state.pendingApproval)!;
    expect(cp.state.pendingApproval).toMatchObject({ approvalId: awaited[0], call: { name: 'read_file', arguments: '{"path":"a.md"}' } });
    expect(executions).toEqual(['a.md']);
    expect(doneOf(events).stopReason).toBe('final_answer');
    // the checkpoint after the result no longer holds a pending call
    expect(ofType(events, 'checkpoint').at(-1)!.state.pendingApproval).toBeUndefined();
  });

  it('pauses while waiting without running the call; a resume asks again (new id), a takeover awaits the same id', async () => {
    const first = setup([toolTurn('read_file', '{"path":"a.md"}')], () => ({ decision: 'paused' }));
    const events = await collect(new TwoStageStrategy().execute(first.ctx));
    expect(events.at(-1)).toEqual({ type: 'paused', resumeFromPhaseIndex: 2 });
    expect(first.executions).toEqual([]);
    const state = ofType(events, 'checkpoint').at(-1)!.state;

    const resumed = setup([answer('Done.')], () => approve, { resumeFrom: { phaseIndex: 2, state } });
    const again = await collect(new TwoStageStrategy().execute(resumed.ctx));
    expect(resumed.awaited[0]).not.toBe(first.awaited[0]);
    expect(ofType(again, 'approval_required')[0].approvalId).toBe(resumed.awaited[0]);
    expect(resumed.executions).toEqual(['a.md']);
    expect(doneOf(again).stopReason).toBe('final_answer');

    const takeover = setup([answer('Done.')], () => approve, { resumeFrom: { phaseIndex: 2, state, takeover: true } });
    await collect(new TwoStageStrategy().execute(takeover.ctx));
    expect(takeover.awaited).toEqual([first.awaited[0]]);
    expect(takeover.executions).toEqual(['a.md']);
  });

  it('deny answers the model with a declined result; nothing runs', async () => {
    const { ctx, executions } = setup([toolTurn('read_file', '{"path":"a.md"}'), answer('OK, I will not.')], () => ({ decision: 'deny', reason: 'no', by: 'k1', edited: false }));
    const events = await collect(new TwoStageStrategy().execute(ctx));
    expect(executions).toEqual([]);
    expect(ofType(events, 'approval_decided')[0]).toMatchObject({ decision: 'deny', by: 'k1', reason: 'no' });
    expect(ofType(events, 'tool_progress').at(-1)).toMatchObject({ outcome: 'denied' });
    expect(doneOf(events).stopReason).toBe('final_answer');
  });
});
