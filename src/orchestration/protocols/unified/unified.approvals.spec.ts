import { unwrapUntrustedBlock } from '../../../common/util/untrusted-block';
import { answer, callTool, finish, ScriptedLlm, type ScriptedResponse } from '../../../../test/support/scripted-llm';
import { collect, doneOf, ofType, textOf } from '../../../../test/support/protocol-events';
import { MemoryTrace } from '../../../../test/support/memory-trace';
import { waitFor } from '../../../../test/support/wait-for';
import type { AppConfigService } from '../../../config/app-config.service';
import type { LlmMessage } from '../../../llm/llm-adapter.port';
import type { ApprovalSetting, ToolDefinition, ToolExecuteResult } from '../../../tools/tool-definition';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { ToolRunnerService } from '../../../tools/tool-runner.service';
import type { ApprovalDecision, ApprovalsPort } from '../../approvals.port';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { UnifiedStrategy } from './unified.strategy';

/** The runner's configuration: `write_file` and `delete_file` need a person (TOOLS_REQUIRE_APPROVAL), the rest never waits. */
const config = {
  get: (k: string) => ({ TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536, TOOLS_APPROVAL_DEFAULT: 'destructive' } as Record<string, unknown>)[k],
  list: (k: string) => (k === 'TOOLS_REQUIRE_APPROVAL' ? ['write_file', 'delete_*'] : []),
} as unknown as AppConfigService;

/** Real registry and runner with three tools; `executions` counts what actually ran. */
function makeTools(trace: MemoryTrace) {
  const executions: Array<{ name: string; args: Record<string, unknown> }> = [];
  const registry = new ToolRegistryService(config, trace);
  const def = (name: string, properties: Record<string, unknown>, required: string[], exec: (a: Record<string, unknown>) => ToolExecuteResult): ToolDefinition => ({
    name,
    description: `${name} tool`,
    parameters: { type: 'object', properties, required, additionalProperties: false },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (args) => {
      executions.push({ name, args });
      return exec(args);
    },
  });
  registry.register(def('read_file', { path: { type: 'string' } }, ['path'], (a) => ({ output: { path: a.path, content: `contents of ${a.path}` } })));
  registry.register(
    def('write_file', { path: { type: 'string' }, content: { type: 'string' }, token: { type: 'string', 'x-secret': true } }, ['path', 'content'], (a) => ({ output: { written: a.path, bytes: String(a.content).length } })),
  );
  registry.register(def('delete_file', { path: { type: 'string' } }, ['path'], (a) => ({ output: { deleted: a.path } })));
  return { runner: new ToolRunnerService(registry, config, trace), executions };
}

interface AskedApproval {
  approvalId: string;
  signal: AbortSignal;
  decide(d: ApprovalDecision): void;
}

/** The run engine's side, played by the test: each `await` is handed to the test, which decides when and how. */
class FakeApprovals implements ApprovalsPort {
  readonly asked: AskedApproval[] = [];
  private readonly waiters: Array<() => void> = [];
  /** like the real port: rejects with the signal's reason on cancel (unless told to ignore the signal) */
  constructor(private readonly honoursSignal = true) {}

  await(approvalId: string, signal: AbortSignal): Promise<ApprovalDecision> {
    return new Promise((resolve, reject) => {
      if (this.honoursSignal) signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      this.asked.push({ approvalId, signal, decide: resolve });
      this.waiters.splice(0).forEach((w) => w());
    });
  }

  /** Resolves once `n` awaits have been made. */
  async awaited(n: number): Promise<AskedApproval[]> {
    while (this.asked.length < n) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.asked.slice(0, n);
  }
}

function setup(script: ScriptedResponse[], opts: { approvals?: FakeApprovals | null; setting?: ApprovalSetting } = {}) {
  const trace = new MemoryTrace();
  const { runner, executions } = makeTools(trace);
  const llm = new ScriptedLlm(script);
  const abort = new AbortController();
  const port = opts.approvals === undefined ? new FakeApprovals() : opts.approvals;
  const ctx: ProtocolExecutionContext = {
    requestId: 'req-1',
    projectId: 'default',
    conversationId: 'conv-1',
    messages: [{ role: 'user', content: 'Update the notes.' }],
    mode: 'act',
    llm,
    tools: runner,
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: abort.signal,
    control: { pauseRequested: () => false },
    flags: { orchestratorEnabled: true },
    ...(port ? { approvals: Object.assign(port, { setting: opts.setting ?? 'policy' }) } : {}),
  };
  return { ctx, llm, trace, executions, abort, port: port as FakeApprovals };
}

/** Runs the turn in the background, recording events as they come (so a test can look while it waits). */
function start(ctx: ProtocolExecutionContext) {
  const seen: ProtocolEvent[] = [];
  const finished = collect(new UnifiedStrategy().execute(ctx), (e) => seen.push(e));
  return { seen, finished };
}

const WRITE = '{"path":"notes.md","content":"new notes"}';
const readAndWrite = [...callTool(0, 'read_file', '{"path":"a.md"}'), ...callTool(1, 'write_file', WRITE), finish('tool_calls')];
const toolMessages = (messages: LlmMessage[]) => messages.filter((m) => m.role === 'tool').map((m) => ({ ...m, content: unwrapUntrustedBlock(m.content ?? '') }));
const progressOf = (events: ProtocolEvent[], tool: string) => ofType(events, 'tool_progress').filter((p) => p.tool === tool).map((p) => p.action);
const approve = (over: Partial<Extract<ApprovalDecision, { decision: 'approve' }>> = {}): ApprovalDecision => ({ decision: 'approve', edited: false, by: 'key-1', ...over });

describe('UnifiedStrategy: calls that wait for a person (issue #32)', () => {
  it('runs the calls that need no approval, asks for the other, and calls the model again only after the decision; approve runs it once', async () => {
    const { ctx, llm, executions, port } = setup([readAndWrite, answer('Notes updated.')]);
    const turn = start(ctx);
    const [asked] = await port.awaited(1);

    // while it waits: read_file ran and completed, write_file did not run, the model was called once
    expect(executions.map((e) => e.name)).toEqual(['read_file']);
    expect(progressOf(turn.seen, 'read_file')).toEqual(['calling', 'completed']);
    expect(progressOf(turn.seen, 'write_file')).toEqual(['calling']);
    expect(llm.calls).toBe(1);
    const required = ofType(turn.seen, 'approval_required');
    expect(required).toEqual([
      { type: 'approval_required', approvalId: asked.approvalId, tool: 'write_file', callId: 'call_1_write_file', arguments: { path: 'notes.md', content: 'new notes' }, reason: 'configured' },
    ]);
    // the wait starts only after the event was handed on (the run engine stores it when it handles it)
    expect(turn.seen.at(-1)).toBe(required[0]);

    asked.decide(approve());
    const events = await turn.finished;
    expect(doneOf(events).stopReason).toBe('final_answer');
    expect(textOf(events)).toBe('Notes updated.');
    expect(executions.map((e) => e.name)).toEqual(['read_file', 'write_file']);
    expect(ofType(events, 'approval_decided')).toEqual([{ type: 'approval_decided', approvalId: asked.approvalId, decision: 'approve', edited: false, by: 'key-1' }]);
    // write_file completes only after the decision, once
    const types = events.map((e) => (e.type === 'tool_progress' ? `${e.tool}:${e.action}` : e.type));
    expect(types.indexOf('write_file:completed')).toBeGreaterThan(types.indexOf('approval_decided'));
    expect(progressOf(events, 'write_file')).toEqual(['calling', 'completed']);
    // both results reach the model, in call order
    expect(llm.calls).toBe(2);
    expect(toolMessages(llm.requests[1].messages).map((m) => [m.toolCallId, JSON.parse(m.content!)])).toEqual([
      ['call_0_read_file', { path: 'a.md', content: 'contents of a.md' }],
      ['call_1_write_file', { written: 'notes.md', bytes: 9 }],
    ]);
  });

  it('answers a denied call with a declined result the model reads, and the turn ends with an answer', async () => {
    const { ctx, llm, executions, port } = setup([readAndWrite, answer('I did not change the notes, as you asked.')]);
    const turn = start(ctx);
    const [asked] = await port.awaited(1);
    asked.decide({ decision: 'deny', reason: 'not today', by: 'key-2', edited: false });
    const events = await turn.finished;

    expect(executions.map((e) => e.name)).toEqual(['read_file']);
    expect(ofType(events, 'approval_decided')).toEqual([{ type: 'approval_decided', approvalId: asked.approvalId, decision: 'deny', edited: false, by: 'key-2', reason: 'not today' }]);
    expect(ofType(events, 'tool_progress').filter((p) => p.tool === 'write_file').map((p) => [p.action, p.outcome])).toEqual([
      ['calling', undefined],
      ['failed', 'denied'],
    ]);
    const [, declined] = toolMessages(llm.requests[1].messages);
    expect(declined.toolCallId).toBe('call_1_write_file');
    expect(declined.content).toContain('the user declined this call (not today)');
    expect(JSON.parse(declined.content!)).toMatchObject({ is_error: true, outcome: 'denied' });
    expect(doneOf(events).stopReason).toBe('final_answer');
    expect(textOf(events)).toBe('I did not change the notes, as you asked.');
  });

  it('runs the arguments a person edited, not the model\'s', async () => {
    const { ctx, llm, executions, port } = setup([readAndWrite, answer('Done.')]);
    const turn = start(ctx);
    const [asked] = await port.awaited(1);
    asked.decide(approve({ arguments: { path: 'notes-draft.md', content: 'edited' }, edited: true }));
    const events = await turn.finished;

    expect(executions.filter((e) => e.name === 'write_file').map((e) => e.args)).toEqual([{ path: 'notes-draft.md', content: 'edited' }]);
    expect(ofType(events, 'approval_decided')[0]).toMatchObject({ decision: 'approve', edited: true });
    expect(JSON.parse(toolMessages(llm.requests[1].messages)[1].content!)).toEqual({ written: 'notes-draft.md', bytes: 6 });
    expect(ofType(events, 'tool_progress').find((p) => p.tool === 'write_file' && p.action === 'completed')?.params).toEqual({ path: 'notes-draft.md', content: 'edited' });
  });

  it('waits for every decision of a step, in any order, and asks in the model\'s order', async () => {
    const three = [
      ...callTool(0, 'delete_file', '{"path":"old.md"}'),
      ...callTool(1, 'read_file', '{"path":"a.md"}'),
      ...callTool(2, 'write_file', WRITE),
      finish('tool_calls'),
    ];
    const { ctx, llm, executions, port } = setup([three, answer('Both handled.')]);
    const turn = start(ctx);
    const [del, write] = await port.awaited(2);
    expect(ofType(turn.seen, 'approval_required').map((a) => [a.tool, a.approvalId])).toEqual([
      ['delete_file', del.approvalId],
      ['write_file', write.approvalId],
    ]);
    expect(new Set([del.approvalId, write.approvalId]).size).toBe(2);

    write.decide(approve());
    // the approved call runs while the other still waits; the model is not called yet
    await waitFor(() => executions.some((e) => e.name === 'write_file'), { what: 'the approved write_file to run' });
    expect(llm.calls).toBe(1);
    expect(progressOf(turn.seen, 'delete_file')).toEqual(['calling']);

    del.decide({ decision: 'deny', reason: 'keep it', by: null, edited: false });
    const events = await turn.finished;
    expect(executions.map((e) => e.name)).toEqual(['read_file', 'write_file']);
    expect(ofType(events, 'approval_decided').map((d) => [d.approvalId, d.decision])).toEqual([
      [write.approvalId, 'approve'],
      [del.approvalId, 'deny'],
    ]);
    expect(toolMessages(llm.requests[1].messages).map((m) => m.toolCallId)).toEqual(['call_0_delete_file', 'call_1_read_file', 'call_2_write_file']);
    expect(doneOf(events).stopReason).toBe('final_answer');
  });

  it('shows the arguments masked as tool_progress shows them', async () => {
    const secretWrite = [...callTool(0, 'write_file', '{"path":"n.md","content":"x","token":"tok-very-secret"}'), finish('tool_calls')];
    const { ctx, port } = setup([secretWrite, answer('ok')]);
    const turn = start(ctx);
    const [asked] = await port.awaited(1);
    const shown = ofType(turn.seen, 'approval_required')[0].arguments;
    expect(JSON.stringify(shown)).not.toContain('tok-very-secret');
    expect(shown).toEqual(ofType(turn.seen, 'tool_progress')[0].params);
    asked.decide(approve());
    await turn.finished;
  });

  it('asks for every call when the conversation says always', async () => {
    const { ctx, executions, port } = setup([[...callTool(0, 'read_file', '{"path":"a.md"}'), finish('tool_calls')], answer('ok')], { setting: 'always' });
    const turn = start(ctx);
    const [asked] = await port.awaited(1);
    expect(executions).toEqual([]);
    expect(ofType(turn.seen, 'approval_required')[0]).toMatchObject({ tool: 'read_file', reason: 'conversation_always' });
    asked.decide(approve());
    expect(doneOf(await turn.finished).stopReason).toBe('final_answer');
    expect(executions.map((e) => e.name)).toEqual(['read_file']);
  });

  it('declines a call whose wait was paused (unified has no pause point) with reason paused', async () => {
    const { ctx, llm, executions, port } = setup([readAndWrite, answer('ok')]);
    const turn = start(ctx);
    const [asked] = await port.awaited(1);
    asked.decide({ decision: 'paused' });
    const events = await turn.finished;
    expect(executions.map((e) => e.name)).toEqual(['read_file']);
    expect(ofType(events, 'approval_decided')[0]).toMatchObject({ decision: 'deny', reason: 'paused', by: null, edited: false });
    expect(toolMessages(llm.requests[1].messages)[1].content).toContain('declined this call (paused)');
    expect(doneOf(events).stopReason).toBe('final_answer');
  });

  it.each([
    ['rejects the wait', true],
    ['never answers', false],
  ])('ends the turn cancelled when it is cancelled while a call waits (the port %s)', async (_name, honoursSignal) => {
    const { ctx, llm, executions, port, abort } = setup([readAndWrite, answer('never')], { approvals: new FakeApprovals(honoursSignal) });
    const turn = start(ctx);
    const [asked] = await port.awaited(1);
    expect(asked.signal).toBe(ctx.signal);
    abort.abort();
    const events = await turn.finished;

    expect(doneOf(events).stopReason).toBe('cancelled');
    expect(llm.calls).toBe(1);
    expect(executions.map((e) => e.name)).toEqual(['read_file']);
    expect(ofType(events, 'approval_decided')).toEqual([]);
    expect(ofType(events, 'error')).toEqual([]);
    expect(ofType(events, 'tool_progress').filter((p) => p.tool === 'write_file').map((p) => [p.action, p.outcome])).toEqual([
      ['calling', undefined],
      ['failed', 'cancelled'],
    ]);
    const lastPhase = ofType(events, 'phase').at(-1)!;
    expect(lastPhase).toMatchObject({ status: 'end', phase: 'tool_phase', reason: 'cancelled' });
  });

  it('ends the turn cancelled when the wait fails without a cancel, and traces why', async () => {
    const failing: ApprovalsPort & { setting: ApprovalSetting } = { setting: 'policy', await: () => Promise.reject(new Error('approvals table unreachable')) };
    const { ctx, llm, executions, trace } = setup([readAndWrite, answer('never')], { approvals: null });
    const events = await collect(new UnifiedStrategy().execute({ ...ctx, approvals: failing }));
    expect(doneOf(events).stopReason).toBe('cancelled');
    expect(llm.calls).toBe(1);
    expect(executions.map((e) => e.name)).toEqual(['read_file']);
    expect(trace.ofType('approval_wait_failed')[0].details).toMatchObject({ tool: 'write_file', message: 'approvals table unreachable' });
  });

  it('without ctx.approvals nothing waits: every call runs as before', async () => {
    const { ctx, llm, executions } = setup([readAndWrite, answer('Notes updated.')], { approvals: null });
    const events = await collect(new UnifiedStrategy().execute(ctx));
    expect(executions.map((e) => e.name)).toEqual(['read_file', 'write_file']);
    expect(ofType(events, 'approval_required')).toEqual([]);
    expect(ofType(events, 'approval_decided')).toEqual([]);
    expect(toolMessages(llm.requests[1].messages).map((m) => m.toolCallId)).toEqual(['call_0_read_file', 'call_1_write_file']);
    expect(doneOf(events).stopReason).toBe('final_answer');
  });
});

