import { unwrapUntrustedBlock } from '../../../common/util/untrusted-block';
import type { LlmMessage, LlmRequest } from '../../llm-adapter.port';

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
  /** every tool result in the conversation, oldest first, with the tool that produced it when known */
  toolResults: ReplayToolResult[];
  /** tool calls the assistant already made in this conversation (gives deterministic, unique ids) */
  previousToolCalls: number;
  /** a non-streaming `complete` call: the tool-only modes' one decision over the tools (chat turns stream) */
  decision?: boolean;
}

/** A tool result as a transcript sees it. */
export interface ReplayToolResult {
  /** the tool's name: a tool message's `name`, its call in an assistant message, or a two-stage "[Tool result #N — name …]" header */
  tool?: string;
  /** the result text (for two-stage, without the header and footer lines) */
  content: string;
  /** the result says the call failed (`is_error` in a unified tool message, a failed outcome in a two-stage header) */
  isError: boolean;
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

/**
 * The message is a tool result injected as a system message (two-stage): it starts with the
 * boxed header. A system prompt that merely mentions "[Tool result #N …]" is not one.
 */
function isToolResultSystemMessage(content: string): boolean {
  return content.trimStart().startsWith('[Tool result');
}

/** Two-stage's header: `[Tool result #N — name {args} — outcome…]`. */
const TWO_STAGE_HEADER = /^\[Tool result(?: #\d+)?(?: — |: )([A-Za-z0-9_.:-]+)[^\n]*/;

function toolResultOf(m: LlmMessage, callNames: Map<string, string>): ReplayToolResult {
  const content = unwrapUntrustedBlock(m.content ?? '');
  if (m.role === 'tool') {
    const tool = m.name ?? (m.toolCallId ? callNames.get(m.toolCallId) : undefined);
    return { ...(tool ? { tool } : {}), content, isError: /^\s*\{\s*"is_error"\s*:\s*true/.test(content) };
  }
  const header = TWO_STAGE_HEADER.exec(content);
  if (!header) return { content, isError: false };
  const lines = content.split('\n');
  const body =
    lines.length === 1
      ? content.slice(header[0].indexOf(']') + 1).trim() // one-line form: "[Tool result: name] output"
      : unwrapUntrustedBlock(lines.slice(1, /^\[End of tool result/.test(lines[lines.length - 1]) ? -1 : undefined).join('\n'));
  // "[Tool result #N — name args — outcome( — output truncated)]": the third segment is the outcome
  const status = header[0].split(' — ')[2];
  return { tool: header[1], content: body, isError: status !== undefined && !status.startsWith('success') };
}

/** Digests a request for the transcripts. */
export function readReplayContext(request: LlmRequest, options: { decision?: boolean } = {}): ReplayContext {
  const messages = request.messages ?? [];
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const callNames = new Map<string, string>();
  for (const m of messages) for (const c of m.toolCalls ?? []) callNames.set(c.id, c.name);
  const resultMessages = messages.filter((m) => m.role === 'tool' || (m.role === 'system' && isToolResultSystemMessage(m.content ?? '')));
  const toolMessage = resultMessages[resultMessages.length - 1];
  const toolResults = resultMessages.map((m) => toolResultOf(m, callNames));
  const assistantCalls = messages.reduce((n, m) => n + (m.role === 'assistant' ? (m.toolCalls?.length ?? 0) : 0), 0);
  return {
    request,
    question: lastUser?.content ?? '',
    callableTools: request.toolChoice === 'none' ? [] : (request.tools ?? []).map((t) => t.name),
    ...(toolMessage ? { toolResult: toolMessage.content ?? '' } : {}),
    toolResults,
    // two-stage keeps no assistant call messages: its injected results count instead, so ids stay unique
    previousToolCalls: Math.max(assistantCalls, resultMessages.length),
    ...(options.decision ? { decision: true } : {}),
  };
}
