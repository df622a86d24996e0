/**
 * The `decision` label of an `approval_decided` record: `approve`, `deny`, or `timeout` for an
 * approval that expired unanswered (decided by `timeout`). Anything else is not counted, so a
 * record of another shape cannot add label values.
 */
export function approvalDecision(d: Record<string, unknown>): 'approve' | 'deny' | 'timeout' | null {
  if (d.decision === 'timeout' || d.by === 'timeout' || d.keyId === 'timeout') return 'timeout';
  return d.decision === 'approve' || d.decision === 'deny' ? d.decision : null;
}
