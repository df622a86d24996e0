import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DbNotifierService } from '../../database/db-notifier.service';
import type { ApprovalDecision, ApprovalsPort } from '../../orchestration/approvals.port';
import type { ApprovalSetting } from '../../tools/tool-definition';
import { TOOL_RUNNER, type ToolRunner } from '../../tools/tool-runner.port';
import type { ApprovalEntity } from '../entities/approval.entity';
import { ApprovalRepository } from '../repositories/approval.repository';
import { RunRepository } from '../repositories/run.repository';
import { RunTakeoverRepository } from '../repositories/run-takeover.repository';
import { LeaseLostError } from '../repositories/run-event.repository';
import { RunControlService } from '../run-control.service';
import { RunSweeperService } from '../run-sweeper.service';
import { RunsException, RunsExceptionCode } from '../runs.exception';
import { mapApproval, type ApprovalDto, type DecideApprovalDto } from './approval.dto';

/** NOTIFY channel of decisions; payload: the approval id. */
export const APPROVALS_CHANNEL = 'orion_approvals';
/** A missed NOTIFY (LISTEN connection down) is made up for by reading the row this often. */
const POLL_MS = 1000;

/**
 * Approvals on the run engine's side: the port a protocol awaits (a decision given on any
 * instance arrives by NOTIFY, or by the poll that covers a missed one; an expired approval is a
 * denial with reason `timeout`; a cancel voids it and rejects; a pause voids it and answers
 * `paused`), and the decision route's rules (one atomic `pending → decided` update wins).
 */
@Injectable()
export class ApprovalsService implements OnModuleInit {
  private readonly logger = new Logger('Approvals');
  /** approval id → wakes its waiter on this instance */
  private readonly waiters = new Map<string, () => void>();
  /** runs whose lease this instance gave up while they waited (shutdown): their waits end, their approvals stay pending */
  private readonly handedOff = new Set<string>();

  constructor(
    private readonly approvals: ApprovalRepository,
    private readonly runs: RunRepository,
    private readonly takeovers: RunTakeoverRepository,
    private readonly control: RunControlService,
    private readonly notifier: DbNotifierService,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    private readonly sweeper: RunSweeperService,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.notifier.listen(APPROVALS_CHANNEL, (id) => this.waiters.get(id)?.());
  }

  /** The port a run's protocol awaits decisions through. */
  port(requestId: string, setting: ApprovalSetting): ApprovalsPort & { setting: ApprovalSetting } {
    return { setting, await: (approvalId, signal) => this.await(requestId, approvalId, signal) };
  }

  /**
   * Stores the approval a run asks for (`approval_required`), pending until `timeoutMs` from
   * now. `fresh: false` when it was stored already (asked again after a takeover): it was sent then.
   */
  async open(
    run: { requestId: string; projectId: string },
    ev: { approvalId: string; tool: string; callId: string; arguments: unknown; reason: string },
    timeoutMs: number,
  ): Promise<{ fresh: boolean; expiresAt: string }> {
    const fresh = await this.approvals.insert({ id: ev.approvalId, ...run, tool: ev.tool, callId: ev.callId, arguments: ev.arguments, reason: ev.reason, expiresInMs: timeoutMs });
    const row = await this.approvals.find(ev.approvalId);
    if (!row || row.requestId !== run.requestId) throw new Error(`approval ${ev.approvalId} belongs to another run`);
    return { fresh, expiresAt: row.expiresAt.toISOString() };
  }

  /** How long an approval waited for its decision (ms), for the trace. */
  async waitedMs(approvalId: string): Promise<number | null> {
    const row = await this.approvals.find(approvalId);
    return row?.decidedAt ? row.decidedAt.getTime() - row.createdAt.getTime() : null;
  }

  /**
   * Ends the waits of a run this instance no longer holds (its lease was released for another
   * instance to take it over) with LeaseLostError: the run stops here storing nothing, and its
   * approvals stay pending for the instance that takes it over.
   */
  handOff(requestId: string): void {
    this.handedOff.add(requestId);
    for (const wake of this.waiters.values()) wake();
  }

  /** Waits for the decision on an approval of a run executing here (see ApprovalsPort.await). */
  async await(requestId: string, approvalId: string, signal: AbortSignal): Promise<ApprovalDecision> {
    let wake: () => void = () => undefined;
    let paused = false;
    this.waiters.set(approvalId, () => wake());
    const stopPause = this.control.whenPauseRequested(requestId, () => {
      paused = true;
      wake();
    });
    const onAbort = () => wake();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (true) {
        // before the signal: a handed-off run must not void the approval another instance awaits
        if (this.handedOff.has(requestId)) throw new LeaseLostError(requestId);
        if (signal.aborted) {
          await this.approvals.voidPending(approvalId, 'cancelled').catch(() => undefined);
          throw signal.reason ?? new Error('aborted');
        }
        let row = await this.approvals.find(approvalId);
        if (!row) throw new Error(`approval ${approvalId} is not stored`);
        if (row.status === 'pending' && paused) {
          if (await this.approvals.voidPending(approvalId, 'paused')) return { decision: 'paused' };
          row = (await this.approvals.find(approvalId))!;
        }
        if (row.status === 'pending' && Date.now() >= row.expiresAt.getTime()) row = (await this.approvals.expireIfDue(approvalId)) ?? (await this.approvals.find(approvalId))!;
        const decided = decisionOf(row);
        if (decided) return decided;
        // a void approval nobody here voided: the run was cancelled or paused elsewhere
        if (row.status === 'void') return row.decisionReason === 'paused' ? { decision: 'paused' } : Promise.reject(signal.reason ?? new Error('approval void'));
        // the next wake-up: a NOTIFY, the poll, the expiry, a pause or the signal
        const untilExpiry = Math.max(0, row.expiresAt.getTime() - Date.now()) + 5;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(POLL_MS, untilExpiry));
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        wake = () => undefined;
      }
    } finally {
      this.waiters.delete(approvalId);
      stopPause();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Whether the run's approval is still undecided: what an edge that answers a waiting turn at
   * once (/v1, Responses, MCP, A2A) asks of an `approval_required` it read, which may be stored
   * and decided since.
   */
  async isPending(requestId: string, approvalId: string): Promise<boolean> {
    const approval = await this.approvals.find(approvalId);
    return approval?.requestId === requestId && approval.status === 'pending';
  }

  /** The approvals of a run, oldest first (404 for an unknown run). */
  async list(requestId: string): Promise<ApprovalDto[]> {
    if (!(await this.runs.findById(requestId))) throw new RunsException(RunsExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    return (await this.approvals.listByRun(requestId)).map(mapApproval);
  }

  /**
   * A person's decision, from any instance: 404 for an approval the run did not ask for; 400
   * (nothing changed) for edited arguments the tool would refuse; 409 when the approval is no
   * longer pending or the run no longer waits. Exactly one concurrent decision wins.
   */
  async decide(requestId: string, approvalId: string, body: DecideApprovalDto, keyId: string | null): Promise<ApprovalDto> {
    const run = await this.runs.findById(requestId);
    if (!run) throw new RunsException(RunsExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    const approval = await this.approvals.find(approvalId);
    if (!approval || approval.requestId !== requestId) throw new RunsException(RunsExceptionCode.APPROVAL_NOT_FOUND, `Run ${requestId} has no approval ${approvalId}`);
    if (approval.status !== 'pending') throw notPending(approval);
    if (run.status !== 'awaiting_approval') {
      throw new RunsException(RunsExceptionCode.RUN_NOT_AWAITING, `Run ${requestId} is ${run.status}; it does not wait for a decision`, { status: run.status });
    }
    let edited: Record<string, unknown> | null = null;
    if (body.arguments !== undefined) {
      if (body.decision !== 'approve') throw new RunsException(RunsExceptionCode.INVALID_APPROVAL, 'arguments can only be given with decision "approve"');
      const checked = this.tools.checkArguments?.(approval.tool, body.arguments) ?? { ok: false as const, errors: ['this tool runner cannot check arguments'] };
      if (!checked.ok) {
        throw new RunsException(RunsExceptionCode.INVALID_APPROVAL, `The edited arguments cannot be used for ${approval.tool}: ${checked.errors.join('; ')}`, { errors: checked.errors });
      }
      edited = checked.value;
    }
    const decided = await this.approvals.decide(approvalId, {
      status: body.decision === 'approve' ? 'approved' : 'denied',
      reason: body.reason ?? null,
      editedArguments: edited,
      decidedBy: keyId,
    });
    // a decision that comes after the approval's time is up loses to the expiry, even before its waiter marks it
    if (!decided) throw notPending((await this.approvals.expireIfDue(approvalId)) ?? (await this.approvals.find(approvalId)) ?? approval);
    // the instance that runs the run (this one or another) hears it at once; its poll would anyway
    this.waiters.get(approvalId)?.();
    await this.notifier.notify(APPROVALS_CHANNEL, approvalId).catch((err: unknown) => this.logger.warn(`approval NOTIFY failed: ${(err as Error).message}`));
    // nobody holds the run (its instance died): it is taken over now rather than at the next sweep
    if (await this.takeovers.awaitsTakeover(requestId).catch(() => false)) this.sweeper.sweepSoon();
    return mapApproval(decided);
  }
}

/** The decision a decided row stands for; null while pending or void. */
function decisionOf(row: ApprovalEntity): ApprovalDecision | null {
  switch (row.status) {
    case 'approved':
      return row.editedArguments
        ? { decision: 'approve', arguments: row.editedArguments, edited: true, by: row.decidedBy, ...(row.decisionReason ? { reason: row.decisionReason } : {}) }
        : { decision: 'approve', edited: false, by: row.decidedBy, ...(row.decisionReason ? { reason: row.decisionReason } : {}) };
    case 'denied':
      return { decision: 'deny', reason: row.decisionReason ?? 'declined', by: row.decidedBy, edited: false };
    case 'expired':
      return { decision: 'deny', reason: 'timeout', by: 'timeout', edited: false };
    default:
      return null;
  }
}

/** 409: the approval was decided, expired or voided; says which, and by whom. */
function notPending(a: ApprovalEntity): RunsException {
  const by = a.status === 'approved' || a.status === 'denied' ? ` by ${a.decidedBy ?? 'an unkeyed caller'}` : '';
  const why = a.status === 'void' ? ` (the run was ${a.decisionReason ?? 'stopped'})` : a.status === 'expired' ? ' (it timed out)' : '';
  return new RunsException(RunsExceptionCode.APPROVAL_NOT_PENDING, `Approval ${a.id} is already ${a.status}${by}${why}`, {
    status: a.status,
    by: a.decidedBy,
    decidedAt: a.decidedAt?.toISOString() ?? null,
  });
}
