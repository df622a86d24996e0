import { LlmError, type LlmCompletion, type LlmStreamEvent, type LlmToolCall } from './llm-adapter.port';
import { ToolCallAccumulator } from './tool-call-accumulator';

/**
 * The inverse of {@link collectCompletion}: a finished, non-streamed answer as the events a
 * stream would have produced (for servers that ignore `stream: true` and answer with JSON).
 */
export function completionToEvents(completion: LlmCompletion): LlmStreamEvent[] {
  const events: LlmStreamEvent[] = [];
  if (completion.reasoning) events.push({ type: 'reasoning-delta', text: completion.reasoning });
  if (completion.content) events.push({ type: 'text-delta', text: completion.content });
  completion.toolCalls.forEach((c, index) => events.push({ type: 'tool-call-delta', index, id: c.id, name: c.name, argumentsFragment: c.arguments }));
  events.push({
    type: 'finish',
    reason: completion.finishReason,
    ...(completion.rawFinishReason !== undefined ? { rawReason: completion.rawFinishReason } : {}),
    ...(completion.usage ? { usage: completion.usage } : {}),
  });
  return events;
}

/**
 * Folds a whole event sequence into an `LlmCompletion` (text, reasoning, merged tool calls,
 * finish). Tool calls whose arguments are not a JSON object are kept, raw, so a caller can
 * report them as invalid instead of never seeing them. An `error` event is thrown as LlmError.
 */
export async function collectCompletion(events: AsyncIterable<LlmStreamEvent> | Iterable<LlmStreamEvent>): Promise<LlmCompletion> {
  let content = '';
  let reasoning = '';
  let finish: Extract<LlmStreamEvent, { type: 'finish' }> | undefined;
  const calls = new ToolCallAccumulator();
  for await (const event of events) {
    switch (event.type) {
      case 'text-delta':
        content += event.text;
        break;
      case 'reasoning-delta':
        reasoning += event.text;
        break;
      case 'tool-call-delta':
        calls.push(event);
        break;
      case 'finish':
        finish = event;
        break;
      case 'error':
        throw new LlmError(event.error);
    }
  }
  calls.finish();
  const toolCalls: LlmToolCall[] = [
    ...calls.completed.map((c) => ({ index: c.index, id: c.id, name: c.name, arguments: c.arguments })),
    ...calls.invalid.filter((c) => c.name).map((c) => ({ index: c.index, id: c.id, name: c.name!, arguments: c.rawArguments })),
  ]
    .sort((a, b) => a.index - b.index)
    .map(({ id, name, arguments: args }) => ({ id, name, arguments: args }));
  if (!finish) throw new LlmError({ code: 'invalid_response', message: 'The response ended without a finish', retryable: false });
  return {
    content,
    ...(reasoning ? { reasoning } : {}),
    toolCalls,
    finishReason: finish.reason,
    ...(finish.rawReason !== undefined ? { rawFinishReason: finish.rawReason } : {}),
    ...(finish.usage ? { usage: finish.usage } : {}),
  };
}
