import { unwrapUntrustedBlock } from '../../../common/util/untrusted-block';
import { answer, callTool, finish, ScriptedLlm, type ScriptedResponse } from '../../../../test/support/scripted-llm';
import { collect, doneOf, ofType, textOf } from '../../../../test/support/protocol-events';
import { MemoryTrace } from '../../../../test/support/memory-trace';
import { waitFor } from '../../../../test/support/wait-for';
import type { AppConfigService } from '../../../config/app-config.service';
import type { LlmMessage } from '../../../llm/llm-adapter.port';
import type { ToolDefinition } from '../../../tools/tool-definition';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { ToolRunnerService } from '../../../tools/tool-runner.service';
import type { ApprovalDecision, ApprovalsPort } from '../../approvals.port';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { parseUnifiedCheckpoint } from '../../run-state/unified-checkpoint';
import { UnifiedStrategy } from './unified.strategy';

/*
 * Issue 44, unified: a step that asks a person stores a checkpoint at the tool phase it waits in,
 * with what ran and what waits. Another instance continuing from it (the first one died or
 * drained) awaits the same approval, runs none of the calls that ran, and runs the approved call once.
 */

const config = {
  get: (k: string) => ({ TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536, TOOLS_APPROVAL_DEFAULT: 'destructive' } as Record<string, unknown>)[k],
  list: (k: string) => (k === 'TOOLS_REQUIRE_APPROVAL' ? ['write_file'] : []),
} as unknown as AppConfigService;

/** The decisions, by approval id, as the approvals table holds them; an undecided one waits until `decide`. */
class Decisions implements ApprovalsPort {
  readonly awaited: string[] = [];
  private readonly given = new Map<string, ApprovalDecision>();
  private readonly waiting = new Map<string, (d: ApprovalDecision) => void>();

  await(approvalId: string): Promise<ApprovalDecision> {
    this.awaited.push(approvalId);
    const d = this.given.get(approvalId);
    return d ? Promise.resolve(d) : new Promise((resolve) => this.waiting.set(approvalId, resolve));
  }

  decide(approvalId: string, d: ApprovalDecision): void {
    this.given.set(approvalId, d);
    this.waiting.get(approvalId)?.(d);
  }
}

function instance(script: ScriptedResponse[], resumeFrom?: ProtocolExecutionContext['resumeFrom']) {
  const trace = new MemoryTrace();
  const ran: string[] = [];
  const registry = new ToolRegistryService(config, trace);
  const def = (name: string, origin: ToolDefinition['origin']): ToolDefinition => ({
    name,
    description: `${name} tool`,
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false },
    origin,
    isAvailable: () => true,
    execute: async (a) => {
      ran.push(name);
      return { output: { tool: name, path: a.path } };
    },
  });
  registry.register(def('read_file', 'builtin'));
  // an MCP tool without readOnlyHint: a side effect, never run twice
  registry.register(def('write_file', 'mcp:files'));
  const llm = new ScriptedLlm(script);
  const decisions = new Decisions();
  const ctx: ProtocolExecutionContext = {
    requestId: 'req-1',
    projectId: 'default',
    conversationId: 'conv-1',
    messages: [{ role: 'user', content: 'Update the notes.' }],
    mode: 'act',
    llm,
    tools: new ToolRunnerService(registry, config, trace),
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: new AbortController().signal,
    control: { pauseRequested: () => false },
    flags: { orchestratorEnabled: true },
    approvals: Object.assign(decisions, { setting: 'policy' as const }),
    ...(resumeFrom ? { resumeFrom } : {}),
  };
  return { ctx, llm, ran, decisions };
}

const readAndWrite = [...callTool(0, 'read_file', '{"path":"a.md"}'), ...callTool(1, 'write_file', '{"path":"notes.md"}'), finish('tool_calls')];
const toolMessages = (messages: LlmMessage[]) => messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(unwrapUntrustedBlock(m.content ?? '')) as Record<string, unknown>);
const approve: ApprovalDecision = { decision: 'approve', edited: false, by: 'key-1' };

/** The first instance, up to its wait for a person: the events it stored and its checkpoints (as the run row keeps them). */
async function firstInstanceWaits() {
  const a = instance([readAndWrite, answer('never')]);
  const seen: ProtocolEvent[] = [];
  void collect(new UnifiedStrategy().execute(a.ctx), (e) => seen.push(e));
  await waitFor(() => a.decisions.awaited.length > 0, { what: 'the first instance to wait for the approval' });
  const checkpoints = ofType(seen, 'checkpoint').map((c) => ({ phaseIndex: c.phaseIndex, state: JSON.parse(JSON.stringify(c.state)) as Record<string, unknown> }));
  return { a, seen, checkpoints, approvalId: ofType(seen, 'approval_required')[0].approvalId };
}

describe('unified: a step awaiting a person, continued on another instance (issue 44)', () => {
  it('stores, before it asks, a checkpoint at the tool phase it waits in, with what ran and the approval asked', async () => {
    const { seen, checkpoints, approvalId, a } = await firstInstanceWaits();
    expect(a.ran).toEqual(['read_file']);
    const last = checkpoints.at(-1)!;
    expect(last.phaseIndex).toBe(2);
    const c = parseUnifiedCheckpoint(last.state);
    expect(c.awaiting).toMatchObject({ ran: [{ callId: 'call_0_read_file', result: { toolName: 'read_file', outcome: 'success' } }], asked: [{ callId: 'call_1_write_file', approvalId }], cutOff: [] });
    // stored before the approval is, after the calls that ran
    const kinds = seen.map((e) => (e.type === 'tool_progress' ? `${e.tool}:${e.action}` : e.type));
    expect(kinds.lastIndexOf('checkpoint')).toBeLessThan(kinds.indexOf('approval_required'));
    expect(kinds.lastIndexOf('checkpoint')).toBeGreaterThan(kinds.indexOf('read_file:completed'));
  });

  it('continued from it: the same approval is awaited, the call that ran is not run again, the approved one runs once', async () => {
    const { checkpoints, approvalId } = await firstInstanceWaits();
    const last = checkpoints.at(-1)!;
    const b = instance([answer('Notes updated.')], { phaseIndex: last.phaseIndex, state: last.state, takeover: true });
    b.decisions.decide(approvalId, approve);
    const events = await collect(new UnifiedStrategy().execute(b.ctx));

    expect(b.ran).toEqual(['write_file']);
    expect(b.decisions.awaited).toEqual([approvalId]);
    // it goes on in the phase it waited in: no second tool_calls, no second opening of that phase
    expect(ofType(events, 'tool_calls')).toEqual([]);
    expect(ofType(events, 'phase').filter((p) => p.phase === 'tool_phase').map((p) => [p.status, p.phaseIndex])).toEqual([['end', 2]]);
    expect(ofType(events, 'approval_required').map((e) => e.approvalId)).toEqual([approvalId]);
    expect(ofType(events, 'approval_decided')).toHaveLength(1);
    // the model reads both results, the first one from the checkpoint
    expect(toolMessages(b.llm.requests[0].messages)).toEqual([
      { tool: 'read_file', path: 'a.md' },
      { tool: 'write_file', path: 'notes.md' },
    ]);
    expect(doneOf(events).stopReason).toBe('final_answer');
    expect(textOf(events)).toBe('Notes updated.');
  });

  it('a decision the dead instance had acted on is not run again: an approved side-effect call reads as interrupted, a denied one as denied', async () => {
    const { checkpoints, approvalId } = await firstInstanceWaits();
    const last = checkpoints.at(-1)!;
    for (const [decision, outcome] of [
      [approve, 'interrupted'],
      [{ decision: 'deny', reason: 'no', by: 'key-1', edited: false }, 'denied'],
    ] as const) {
      // each taker reads the checkpoint from the run row afresh
      const state = structuredClone(last.state);
      const b = instance([answer('Told you.')], { phaseIndex: last.phaseIndex, state, takeover: true, startedCalls: ['call_1_write_file'] });
      b.decisions.decide(approvalId, decision);
      const events = await collect(new UnifiedStrategy().execute(b.ctx));
      expect(b.ran).toEqual([]);
      // decided before: neither asked nor sent as decided again
      expect(ofType(events, 'approval_required')).toEqual([]);
      expect(ofType(events, 'approval_decided')).toEqual([]);
      expect(toolMessages(b.llm.requests[0].messages)[1]).toMatchObject({ is_error: true, outcome });
      expect(doneOf(events).stopReason).toBe('final_answer');
    }
  });

  it('handed over while it waits (the port says the run left this instance): the turn stops here with no end of its own', async () => {
    const a = instance([readAndWrite, answer('never')]);
    const left = Object.assign(new Error('run left'), { runLeft: true });
    const ctx = { ...a.ctx, approvals: { setting: 'policy' as const, await: () => Promise.reject(left) } };
    const seen: ProtocolEvent[] = [];
    await expect(collect(new UnifiedStrategy().execute(ctx), (e) => seen.push(e))).rejects.toBe(left);
    // the other instance goes on from the checkpoint stored as the step asked: nothing is ended or closed here
    expect(ofType(seen, 'done')).toEqual([]);
    expect(ofType(seen, 'tool_progress').filter((p) => p.tool === 'write_file').map((p) => p.action)).toEqual(['calling']);
    expect(a.ran).toEqual(['read_file']);
  });
});
