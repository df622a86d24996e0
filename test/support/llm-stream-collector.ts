import type { LlmErrorInfo, LlmStreamEvent, LlmUsage } from '../../src/llm/llm-adapter.port';
import { ToolCallAccumulator } from '../../src/llm/tool-call-accumulator';

/** Everything one adapter stream produced, folded for assertions. */
export interface CollectedStream {
  events: LlmStreamEvent[];
  text: string;
  reasoning: string;
  /** merged, complete tool calls with parsed arguments */
  toolCalls: Array<{ id: string; name: string; args: Record<string, unknown> }>;
  finishes: Array<{ reason: string; rawReason?: string; usage?: LlmUsage }>;
  errors: LlmErrorInfo[];
  /** event type of the last event */
  last?: LlmStreamEvent['type'];
}

/** Reads a whole adapter stream (optionally reacting to each event, e.g. to abort). */
export async function collectStream(
  stream: AsyncIterable<LlmStreamEvent>,
  onEvent?: (event: LlmStreamEvent, index: number) => void,
): Promise<CollectedStream> {
  const out: CollectedStream = { events: [], text: '', reasoning: '', toolCalls: [], finishes: [], errors: [] };
  const calls = new ToolCallAccumulator();
  for await (const event of stream) {
    onEvent?.(event, out.events.length);
    out.events.push(event);
    if (event.type === 'text-delta') out.text += event.text;
    if (event.type === 'reasoning-delta') out.reasoning += event.text;
    if (event.type === 'finish') out.finishes.push({ reason: event.reason, rawReason: event.rawReason, usage: event.usage });
    if (event.type === 'error') out.errors.push(event.error);
    calls.push(event);
  }
  out.toolCalls = calls.completed.map((c) => ({ id: c.id, name: c.name, args: c.args }));
  out.last = out.events[out.events.length - 1]?.type;
  return out;
}
