/**
 * A run's calls that wait for a person, as the executor meets them: the run marked
 * `awaiting_approval` (and running again once the last is decided), the approval stored once,
 * and each request and decision traced, stored and sent.
 */
import type { ProtocolEvent } from '../orchestration/protocol-event';
import type { TraceSink } from '../trace/trace-sink.port';
import type { ApprovalsService } from './approvals/approvals.service';
import type { ExecutingRuns } from './executing-runs';
import { LeaseLostError } from './repositories/run-event.repository';
import type { RunRepository } from './repositories/run.repository';
import type { RunControlService } from './run-control.service';
import type { Leg } from './run-failures';
import { INSTANCE_ID } from './run-lease';
import type { ExecuteRunParams } from './run-params';
import type { RunStream } from './run-stream';

export interface RunApprovalStepsDeps {
  /** present wherever a run asks for approvals (RunExecutorService) */
  approvals?: ApprovalsService;
  runs: RunRepository;
  control: RunControlService;
  executing: ExecutingRuns;
  trace: TraceSink;
  /** APPROVAL_TIMEOUT_MS: how long a call waits when the run does not say */
  timeoutMs: () => number;
}

export class RunApprovalSteps {
  constructor(private readonly deps: RunApprovalStepsDeps) {}

  /**
   * A call waits for a person: the approval is stored (once: asked again after a takeover, it
   * was sent already), the run is marked `awaiting_approval`, and the event, with its expiry, is
   * traced, stored and sent.
   */
  async required(p: ExecuteRunParams, stream: RunStream, ev: Extract<ProtocolEvent, { type: 'approval_required' }>, leg: Leg): Promise<null> {
    const timeoutMs = p.approvals?.timeoutMs ?? this.deps.timeoutMs();
    const { fresh, expiresAt } = await this.deps.approvals!.open({ requestId: p.requestId, projectId: p.projectId }, ev, timeoutMs);
    leg.steps.apply(ev.type, { ...ev, expiresAt, phaseIndex: stream.envelope.phaseIndex });
    if (!(await this.deps.runs.setAwaiting(p.requestId, INSTANCE_ID, true))) throw new LeaseLostError(p.requestId);
    this.deps.control.setAwaiting(p.requestId, true);
    this.deps.executing.awaits(p.requestId, ev.approvalId, stream.envelope.phaseIndex, p.turn.protocol.capabilities.resume === true);
    // asked before (a takeover): nothing is sent, and the run now waits, so what is held goes now
    if (!fresh) {
      await stream.flush();
      return null;
    }
    this.deps.trace.record({
      requestId: p.requestId,
      projectId: p.projectId,
      type: 'approval_requested',
      details: { approvalId: ev.approvalId, tool: ev.tool, callId: ev.callId, reason: ev.reason, expiresAt },
    });
    await stream.emit({ ...ev, expiresAt });
    return null;
  }

  /** The decision arrived: the run is `running` again, and the decision traced, stored and sent. */
  async decided(p: ExecuteRunParams, stream: RunStream, ev: Extract<ProtocolEvent, { type: 'approval_decided' }>): Promise<null> {
    // a unified step may wait for several calls at once: the run waits until the last is decided
    if (this.deps.executing.decided(p.requestId, ev.approvalId)) {
      if (!(await this.deps.runs.setAwaiting(p.requestId, INSTANCE_ID, false))) throw new LeaseLostError(p.requestId);
      this.deps.control.setAwaiting(p.requestId, false);
    }
    this.deps.trace.record({
      requestId: p.requestId,
      projectId: p.projectId,
      type: 'approval_decided',
      details: {
        approvalId: ev.approvalId,
        decision: ev.decision,
        keyId: ev.by,
        edited: ev.edited,
        waitMs: await this.deps.approvals!.waitedMs(ev.approvalId),
        ...(ev.reason ? { reason: ev.reason } : {}),
      },
    });
    await stream.emit(ev);
    return null;
  }
}
