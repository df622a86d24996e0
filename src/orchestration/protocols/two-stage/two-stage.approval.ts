import { randomUUID } from 'node:crypto';
import type { CompletedToolCall } from '../../../llm/tool-call-accumulator';
import type { ApprovalDecision } from '../../approvals.port';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import type { PendingApproval } from '../../run-state/run-checkpoint';
import { checkpoint, type TurnState } from './two-stage.state';

/** How the wait for a person ended. */
export type ApprovalWait = { kind: 'decided'; decision: Exclude<ApprovalDecision, { decision: 'paused' }> } | { kind: 'paused' } | { kind: 'cancelled' };

/**
 * Asks a person about the call of tool phase `phaseIndex` (issue 32): a checkpoint holding the
 * pending call (a pause resumes from it, a takeover re-awaits it), then `approval_required`,
 * then the wait, then `approval_decided`. `approvalId`: the one to await again (takeover).
 */
export async function* askApproval(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  call: CompletedToolCall,
  phaseIndex: number,
  reason: string,
  signature: string | null,
  approvalId: string = randomUUID(),
): AsyncGenerator<ProtocolEvent, ApprovalWait, undefined> {
  const approvals = ctx.approvals!;
  s.pendingApproval = { approvalId, call: { id: call.id, name: call.name, arguments: call.arguments }, signature };
  yield { type: 'checkpoint', phaseIndex, state: checkpoint(s) as unknown as Record<string, unknown> };
  yield { type: 'approval_required', approvalId, tool: call.name, callId: call.id, arguments: ctx.tools.redactArgs(call.name, call.args), reason };
  let d: ApprovalDecision;
  try {
    d = await approvals.await(approvalId, ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted) return { kind: 'cancelled' };
    throw err;
  }
  // paused: the stored checkpoint keeps the pending call; the resumed run asks again
  if (d.decision === 'paused') return { kind: 'paused' };
  s.pendingApproval = undefined;
  yield { type: 'approval_decided', approvalId, decision: d.decision, edited: d.edited, by: d.by, ...(d.reason ? { reason: d.reason } : {}) };
  return { kind: 'decided', decision: d };
}

/** The pending (or cut-off) call of a checkpoint, as the model made it. */
export function pendingCall(p: Pick<PendingApproval, 'call'>): CompletedToolCall {
  let args: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(p.call.arguments || '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
  } catch {
    // only calls whose arguments parsed reach a tool phase; an unreadable one runs with none (the runner refuses it)
  }
  return { ...p.call, index: 0, args };
}
