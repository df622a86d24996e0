import type { LlmMessage, LlmRequest } from '../llm-adapter.port';
import { thinkingOffFields, type ThinkingFamily } from './thinking-switch';

/** A Chat Completions message on the wire (snake_case). */
export type OpenAiWireMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Our camelCase messages in OpenAI wire form (`toolCalls` → `tool_calls`, `toolCallId` → `tool_call_id`). */
export function toOpenAiMessages(messages: LlmMessage[]): OpenAiWireMessage[] {
  return messages.map((m): OpenAiWireMessage => {
    switch (m.role) {
      case 'assistant': {
        const calls = m.toolCalls ?? [];
        if (calls.length === 0) return { role: 'assistant', content: m.content ?? '' };
        return {
          role: 'assistant',
          // OpenAI accepts null content next to tool_calls; some servers choke on "" there.
          content: m.content ? m.content : null,
          tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments || '{}' } })),
        };
      }
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content ?? '' };
      case 'system':
      case 'user':
      default:
        return { role: m.role === 'system' ? 'system' : 'user', content: m.content ?? '' };
    }
  });
}

/**
 * The Chat Completions request body.
 * - `stream_options.include_usage` asks for the final usage chunk (ignored by servers without it).
 * - `tool_choice` is sent only together with tools: OpenAI rejects a tool_choice without tools,
 *   and with no tools offered the model cannot call one anyway. `none` keeps the tools in the
 *   request (their descriptions may matter to the answer) but forbids calling them.
 * - `disableReasoning` has no portable switch on Chat Completions (`reasoning_effort` is
 *   rejected by non-reasoning OpenAI models, `chat_template_kwargs` by OpenAI itself): the
 *   family's own switch is sent only when the family is known (thinking-switch.ts), and not at
 *   all with `LLM_THINKING=on`.
 * - `extraBody` (`LLM_EXTRA_BODY`) comes first, so the fields Orion sets win over it, except the
 *   thinking switch, which it may replace.
 */
export function buildChatCompletionBody(
  request: LlmRequest,
  model: string,
  stream: boolean,
  opts: { thinking?: ThinkingFamily; thinkingOn?: boolean; extraBody?: Record<string, unknown> } = {},
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...(opts.extraBody ?? {}), model, messages: toOpenAiMessages(request.messages) };
  if (request.disableReasoning && !opts.thinkingOn && opts.thinking) {
    for (const [k, v] of Object.entries(thinkingOffFields(opts.thinking, model))) if (!(k in (opts.extraBody ?? {}))) body[k] = v;
  }
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  const tools = request.tools ?? [];
  if (tools.length > 0) {
    body.tools = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
    if (request.toolChoice) body.tool_choice = request.toolChoice;
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  return body;
}
