/**
 * Orchestration asks, runs answer: a protocol that has a call waiting for a person yields
 * `approval_required` (the run engine stores the approval and marks the run
 * `awaiting_approval`), then awaits the decision here. The run engine implements the port
 * (runs/approvals); orchestration never imports it.
 */

/** A person's decision, or why there will be none. */
export type ApprovalDecision =
  | {
      decision: 'approve';
      /** the arguments a person edited (already checked against the tool's schema); absent: the model's */
      arguments?: Record<string, unknown>;
      edited: boolean;
      by: string | null;
      reason?: string;
    }
  /** declined by a person, or expired (`by: 'timeout'`, reason `timeout`) */
  | { decision: 'deny'; reason: string; by: string | null; edited: false }
  /** the run was asked to pause while it waited: the approval is void, the run pauses before the call */
  | { decision: 'paused' };

export interface ApprovalsPort {
  /**
   * Resolves with the decision on an approval this run asked for (its `approval_required`
   * stored), on whichever instance it was given; an expired approval resolves as a denial with
   * reason `timeout`. Rejects with the signal's reason when the run is cancelled, and with an
   * error whose `runLeft` is true when the run left this instance while it waited (handed over
   * on shutdown: another instance awaits the same approval, so nothing more is done here).
   */
  await(approvalId: string, signal: AbortSignal): Promise<ApprovalDecision>;
}

/** Whether a rejected wait means the run left this instance (see ApprovalsPort.await). */
export function runLeft(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { runLeft?: unknown }).runLeft === true;
}
