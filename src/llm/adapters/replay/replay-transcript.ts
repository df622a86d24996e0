import type { LlmRequest } from '../../llm-adapter.port';

/** What a transcript sees of a request, pre-digested so each transcript stays a few lines. */
export interface ReplayContext {
  request: LlmRequest;
  /** the last user message ("" when there is none) */
  question: string;
  /** tool names the model may call now (empty when none are offered or toolChoice is `none`) */
  callableTools: string[];
  /**
   * the latest tool output in the conversation: a `tool` message, or a system message carrying
   * a tool result (the two-stage protocol injects results as `[Tool result …]` system messages)
   */
  toolResult?: string;
  /** tool calls the assistant already made in this conversation (gives deterministic, unique ids) */
  previousToolCalls: number;
}

/** One scripted reply: text, tool calls, or both. */
export interface ReplayReply {
  text?: string;
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> }>;
}

/**
 * A bundled transcript: `matches` picks the situation it answers, `reply` gives the scripted
 * answer. The replay adapter tries transcripts in order and uses the first match, so adding a
 * transcript is adding a module and a line to the list in `index.ts`.
 */
export interface ReplayTranscript {
  readonly name: string;
  matches(ctx: ReplayContext): boolean;
  reply(ctx: ReplayContext): ReplayReply;
}

/** The message is a tool result smuggled in as a system message (two-stage). */
function isToolResultSystemMessage(content: string): boolean {
  return content.startsWith('[Tool result') || content.includes('Tool result');
}

/** Digests a request for the transcripts. */
export function readReplayContext(request: LlmRequest): ReplayContext {
  const messages = request.messages ?? [];
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const toolMessage = [...messages]
    .reverse()
    .find((m) => m.role === 'tool' || (m.role === 'system' && isToolResultSystemMessage(m.content ?? '')));
  return {
    request,
    question: lastUser?.content ?? '',
    callableTools: request.toolChoice === 'none' ? [] : (request.tools ?? []).map((t) => t.name),
    ...(toolMessage ? { toolResult: toolMessage.content ?? '' } : {}),
    previousToolCalls: messages.reduce((n, m) => n + (m.role === 'assistant' ? (m.toolCalls?.length ?? 0) : 0), 0),
  };
}
