// The approvals of one chat turn (issue #32): calls that wait for a person, folded from the
// run's `approval_required` / `approval_decided` events, from the approvals route after a
// reload, and from the page's own decisions. Pure: no DOM, no network.

/**
 * One approval as the page shows it. `status` follows the server's (GET …/approvals):
 * `pending` until decided, then `approved`, `denied`, `expired` (denied by timeout) or `void`
 * (the run stopped waiting: cancelled, paused, ended). `sending` and `error` are the page's own.
 * @typedef {{ approvalId: string, tool: string, callId: string, arguments: unknown, reason: string,
 *             expiresAt: string | null, status: 'pending' | 'approved' | 'denied' | 'expired' | 'void',
 *             edited: boolean, by: string | null, decisionReason: string | null,
 *             sending: boolean, error: string | null }} Approval
 */

const STATUSES = new Set(['pending', 'approved', 'denied', 'expired', 'void']);

/** @param {{ approvals: Approval[] }} s @param {unknown} approvalId */
export function findApproval(s, approvalId) {
  return s.approvals.find((a) => a.approvalId === approvalId);
}

/** The approvals still waiting for a decision. @param {{ approvals: Approval[] }} s */
export function pendingApprovals(s) {
  return s.approvals.filter((a) => a.status === 'pending');
}

/** @param {{ approvals: Approval[] }} s @param {string} approvalId */
function upsert(s, approvalId) {
  let a = findApproval(s, approvalId);
  if (!a) {
    a = { approvalId, tool: 'tool', callId: '', arguments: {}, reason: '', expiresAt: null, status: 'pending', edited: false, by: null, decisionReason: null, sending: false, error: null };
    s.approvals.push(a);
  }
  return a;
}

/**
 * `approval_required`: a card that waits. Seen again (a replay, or a run taken over by another
 * instance that asks for the same approval), it keeps any decision it already shows.
 * @param {{ approvals: Approval[] }} s @param {Record<string, any>} d
 */
export function approvalRequired(s, d) {
  if (typeof d.approvalId !== 'string' || !d.approvalId) return;
  const a = upsert(s, d.approvalId);
  Object.assign(a, {
    tool: typeof d.tool === 'string' ? d.tool : a.tool,
    callId: typeof d.callId === 'string' ? d.callId : a.callId,
    arguments: d.arguments ?? a.arguments,
    reason: typeof d.reason === 'string' ? d.reason : a.reason,
    expiresAt: typeof d.expiresAt === 'string' ? d.expiresAt : a.expiresAt,
  });
}

/**
 * `approval_decided` `{decision, edited, by, reason?}`: a denial by `timeout` is an expiry.
 * @param {{ approvals: Approval[] }} s @param {Record<string, any>} d
 */
export function approvalDecided(s, d) {
  if (typeof d.approvalId !== 'string' || !d.approvalId) return;
  const a = upsert(s, d.approvalId);
  const by = typeof d.by === 'string' ? d.by : null;
  Object.assign(a, {
    status: d.decision === 'approve' ? 'approved' : by === 'timeout' ? 'expired' : 'denied',
    edited: d.edited === true,
    by,
    decisionReason: typeof d.reason === 'string' ? d.reason : null,
    sending: false,
    error: null,
  });
}

/**
 * An approval as the approvals route (and the decision route's 200) returns it. Merged into a
 * card the events already drew, or added: the stored row is the truth.
 * @param {{ approvals: Approval[] }} s @param {Record<string, any>} row
 */
export function approvalFromRow(s, row) {
  if (!row || typeof row.approvalId !== 'string') return;
  approvalRequired(s, row);
  const a = upsert(s, row.approvalId);
  if (!STATUSES.has(row.status)) return;
  Object.assign(a, {
    status: row.status,
    edited: row.edited === true,
    by: typeof row.by === 'string' ? row.by : null,
    decisionReason: typeof row.decisionReason === 'string' ? row.decisionReason : null,
  });
  if (row.status !== 'pending') Object.assign(a, { sending: false, error: null });
}

/**
 * The run ended or paused: nothing it still waited for will be decided (a pause voids its
 * approval; a resume asks again with a new id). @param {{ approvals: Approval[] }} s
 */
export function voidPending(s) {
  for (const a of s.approvals) if (a.status === 'pending') Object.assign(a, { status: 'void', sending: false });
}

/** The page sent a decision and waits for the answer. @param {{ approvals: Approval[] }} s @param {string} approvalId */
export function approvalSending(s, approvalId) {
  const a = findApproval(s, approvalId);
  if (a) Object.assign(a, { sending: true, error: null });
}

/**
 * A decision the server refused: the card stays as it was, with the server's message (a 400
 * names what is wrong with edited arguments). @param {{ approvals: Approval[] }} s
 * @param {string} approvalId @param {string} message
 */
export function approvalRefused(s, approvalId, message) {
  const a = findApproval(s, approvalId);
  if (a) Object.assign(a, { sending: false, error: message });
}

/** Whether a card takes a decision now. @param {Approval} a */
export function canDecide(a) {
  return a.status === 'pending' && !a.sending;
}

/**
 * Edited arguments as typed: a JSON object, checked before anything is sent (the server then
 * checks them against the tool's schema).
 * @param {string} text
 * @returns {{ ok: true, value: Record<string, unknown> } | { ok: false, error: string }}
 */
export function parseEditedArguments(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `The arguments are not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, error: 'The arguments must be a JSON object ({ … }).' };
  return { ok: true, value };
}

/**
 * The body of `POST /api/chat/runs/:requestId/approvals/:approvalId`.
 * @param {'approve' | 'deny'} decision @param {{ reason?: string, arguments?: Record<string, unknown> }} [extra]
 */
export function decisionBody(decision, extra = {}) {
  const reason = extra.reason?.trim();
  return {
    decision,
    ...(reason ? { reason } : {}),
    // edited arguments go with an approval only
    ...(decision === 'approve' && extra.arguments ? { arguments: extra.arguments } : {}),
  };
}

/** What a card says about its decision. @param {Approval} a */
export function decisionText(a) {
  // null: the server has no API keys, so no one is named
  const who = a.by === null ? ' (no API key)' : ` by ${a.by}`;
  const why = a.decisionReason ? `: ${a.decisionReason}` : '';
  switch (a.status) {
    case 'approved':
      return `Approved${who}${a.edited ? ' with edited arguments' : ''}`;
    case 'denied':
      return `Denied${who}${why}`;
    case 'expired':
      return 'Expired: no decision in time, so the call was denied';
    case 'void':
      return 'No longer waiting: the run stopped before a decision';
    default:
      return a.sending ? 'Sending…' : 'Waiting for a decision';
  }
}

/**
 * The card's heading, worded as the approval stands: "Approval needed:" only while it waits.
 * @param {Approval} a
 */
export function approvalTitle(a) {
  return { approved: 'Approved: ', denied: 'Denied: ', expired: 'Expired, denied: ', void: 'No longer waiting: ' }[a.status] ?? 'Approval needed: ';
}

/** Arguments as pretty JSON (a string the model sent unparsed stays as it is). @param {unknown} args */
export function prettyArguments(args) {
  if (typeof args === 'string') {
    try {
      return JSON.stringify(JSON.parse(args), null, 2);
    } catch {
      return args;
    }
  }
  return JSON.stringify(args ?? {}, null, 2);
}
