import type { TurnOutcome } from '../runs/turn-outcome';

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
