/**
 * The approval routes' bodies, typed by hand: `POST /api/chat/runs/:requestId/approvals/:approvalId`
 * and `GET /api/chat/runs/:requestId/approvals` were not in docs/openapi.json yet when this
 * client was written. Once they are, these give way to the generated types.
 */

/** A person's answer to an `approval_required` event. */
export interface ApprovalDecision {
  decision: 'approve' | 'deny';
  /** shown with the decision (the `approval_decided` event's `reason`) */
  reason?: string;
  /** approve with these arguments instead of the model's (the decision is then `edited`) */
  arguments?: Record<string, unknown>;
}

/** One approval of a run, as the service lists it: what `approval_required` said, and its decision once made. */
export interface Approval {
  approvalId: string;
  tool: string;
  callId: string;
  arguments: unknown;
  reason: string;
  expiresAt?: string;
  decision?: 'approve' | 'deny' | null;
  [field: string]: unknown;
}
