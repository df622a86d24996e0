import type { LlmMessage, LlmRequest } from '../llm-adapter.port';

/** An `/api/chat` message: like OpenAI's, but tool-call arguments are an OBJECT and tool results name their tool. */
export interface OllamaWireMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
  tool_name?: string;
}

function argsObject(raw: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(raw || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {}; // Ollama rejects a non-object; the invalid call was already reported when it was made
  }
}

export function toOllamaMessages(messages: LlmMessage[]): OllamaWireMessage[] {
  return messages.map((m) => {
    const out: OllamaWireMessage = { role: m.role, content: m.content ?? '' };
    if (m.role === 'assistant' && m.toolCalls?.length) {
      out.tool_calls = m.toolCalls.map((c) => ({ function: { name: c.name, arguments: argsObject(c.arguments) } }));
    }
    if (m.role === 'tool' && m.name) out.tool_name = m.name;
    return out;
  });
}

/**
 * The `/api/chat` body.
 * - Ollama has no `tool_choice`: `none` is honoured by not offering the tools at all.
 * - `think:false` is sent only when the model reports the `thinking` capability (`thinking`
 *   argument), because Ollama rejects `think` for models that cannot think.
 */
export function buildOllamaChatBody(
  request: LlmRequest,
  model: string,
  stream: boolean,
  thinking: boolean,
  opts: { thinkingOn?: boolean; extraBody?: Record<string, unknown> } = {},
): Record<string, unknown> {
  // LLM_EXTRA_BODY first: the fields Orion sets win, except `think`, which it may set itself
  const body: Record<string, unknown> = { ...(opts.extraBody ?? {}), model, messages: toOllamaMessages(request.messages), stream };
  const tools = request.toolChoice === 'none' ? [] : (request.tools ?? []);
  if (tools.length > 0) {
    body.tools = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  }
  const options: Record<string, unknown> = {};
  if (request.temperature !== undefined) options.temperature = request.temperature;
  if (request.maxTokens !== undefined) options.num_predict = request.maxTokens;
  if (Object.keys(options).length > 0) body.options = options;
  if (request.disableReasoning && thinking && !opts.thinkingOn && !('think' in (opts.extraBody ?? {}))) body.think = false;
  return body;
}
