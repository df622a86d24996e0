// Tool-only results (POST /api/orchestration/execute) and approvals (issue #32): a call that
// needs a person is not run; its execution comes back with outcome `approval_required` and its
// arguments. The debug panel lists those calls and can send the request again with the ones a
// person approved (`approvedCalls`), which then run without waiting. Pure: no DOM, no network.

/**
 * The executions of a ToolCallsResult that wait for a person.
 * @param {any} result
 * @returns {{ index: number, tool: string, arguments: Record<string, unknown>, reason: string | null }[]}
 */
export function waitingCalls(result) {
  const executions = Array.isArray(result?.executions) ? result.executions : [];
  return executions.flatMap((e, index) =>
    e && e.outcome === 'approval_required' && typeof e.toolName === 'string'
      ? [{ index, tool: e.toolName, arguments: e.args && typeof e.args === 'object' ? e.args : {}, reason: approvalReason(e) }]
      : [],
  );
}

/** @param {any} e an execution */
function approvalReason(e) {
  if (typeof e.approval?.reason === 'string') return e.approval.reason;
  const details = e.resultObject?.details;
  return typeof details?.reason === 'string' ? details.reason : null;
}

/**
 * The same request again, with the calls a person approved: each by tool name and arguments
 * (the server compares them canonically with what the model decides).
 * @param {Record<string, unknown>} body @param {{ tool: string, arguments: Record<string, unknown> }[]} approved
 */
export function withApprovedCalls(body, approved) {
  return { ...body, approvedCalls: approved.map((c) => ({ tool: c.tool, arguments: c.arguments })) };
}
