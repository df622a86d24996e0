/**
 * The approval routes' bodies (`POST /api/chat/runs/:requestId/approvals/:approvalId`,
 * `GET /api/chat/runs/:requestId/approvals`), written out with their documentation; the
 * generated `DecideApprovalDto` and `ApprovalDto` describe the same shapes.
 */

/** A person's answer to an `approval_required` event. */
export interface ApprovalDecision {
  decision: 'approve' | 'deny';
  /** why; a denial's reason is what the model reads (at most 2,000 characters) */
  reason?: string;
  /** approve only: arguments a person edited, checked as a model's call is (the decision is then `edited`) */
  arguments?: Record<string, unknown>;
}

/** An approval as stored: what was asked, and what was decided. */
export interface Approval {
  approvalId: string;
  requestId: string;
  tool: string;
  callId: string;
  /** the model's arguments as shown to users (secrets masked) */
  arguments: unknown;
  /** why the call waits: configured, conversation_always, destructive, not_read_only, mcp_default_all */
  reason: string;
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'void';
  /** expired counts as deny */
  decision: 'approve' | 'deny' | null;
  decisionReason: string | null;
  edited: boolean;
  editedArguments: Record<string, unknown> | null;
  /** the API key id that decided (null without keys); `timeout` when it expired */
  by: string | null;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
}
