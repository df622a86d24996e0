import { decideRoute, type TurnOutcome } from '../runs/turn-outcome';

/** The MCP tool result of an `ask`: the answer as text, and the same as structured content. */
export interface AskResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent: AskStructured;
  isError?: boolean;
}

export interface AskStructured {
  [key: string]: unknown;
  answer: string;
  requestId: string;
  conversationId: string;
  stopReason: string;
  sources: TurnOutcome['sources'];
  tools: TurnOutcome['tools'];
  error?: { code: string; message: string };
}

/**
 * A finished turn as an MCP tool result. The text is what a model reads: the answer, then the
 * sources it rests on, then the ids to continue with; a turn that failed or was cancelled is an
 * error result (isError), so the calling model does not take a partial answer for the answer.
 */
export function toAskResult(o: TurnOutcome): AskResult {
  const stopReason = o.stopReason ?? 'error';
  const failed = stopReason === 'error' || stopReason === 'cancelled' || o.error !== undefined;
  const lines = [o.answer || (failed ? `The turn ended without an answer (${o.error ? `${o.error.code}: ${o.error.message}` : stopReason}).` : '')];
  if (o.sources.length) lines.push('', 'Sources:', ...o.sources.map((s) => `- ${s.title}${s.url ? ` <${s.url}>` : s.path ? ` (${s.path})` : ''}`));
  lines.push('', `conversationId: ${o.conversationId ?? ''} (pass it to ask to continue this conversation)`);
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: {
      answer: o.answer,
      requestId: o.requestId ?? '',
      conversationId: o.conversationId ?? '',
      stopReason,
      sources: o.sources,
      tools: o.tools,
      ...(o.error && { error: o.error }),
    },
    ...(failed && { isError: true }),
  };
}

/** A refusal before any turn started (bad conversation, unknown route): an error result naming the field. */
export function refusal(message: string): { content: Array<{ type: 'text'; text: string }>; isError: true } {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * A turn that has not ended: waiting for a person (what waits and where to decide it) or still
 * running. Not an error: the run goes on, and `get_answer` with its requestId gives the answer.
 */
export function waitingResult(o: TurnOutcome, state: 'awaiting_approval' | 'running' = 'awaiting_approval'): AskResult {
  const requestId = o.requestId ?? '';
  const a = o.awaiting;
  const head = a
    ? `The turn waits for a person to approve ${a.tool} (approvalId ${a.approvalId}): ${decideRoute(requestId, a.approvalId)}.`
    : 'The turn is still running.';
  const text = [head, `Once it is decided, call get_answer with requestId ${requestId} for the answer.`, '', `conversationId: ${o.conversationId ?? ''}`].join('\n');
  return {
    content: [{ type: 'text', text }],
    structuredContent: {
      answer: o.answer,
      requestId,
      conversationId: o.conversationId ?? '',
      stopReason: state,
      sources: o.sources,
      tools: o.tools,
      ...(a && { approval: { approvalId: a.approvalId, tool: a.tool, arguments: a.arguments, decide: decideRoute(requestId, a.approvalId) } }),
    },
  };
}
