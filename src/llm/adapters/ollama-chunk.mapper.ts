import { randomUUID } from 'node:crypto';
import type { LlmErrorInfo, LlmStreamEvent } from '../llm-adapter.port';
import { normalizeFinishReason } from '../finish-reason';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * Turns Ollama `/api/chat` objects (NDJSON lines, or the single `stream:false` answer) into
 * the port's events.
 * - `message.thinking` → reasoning, `message.content` → text.
 * - Tool calls arrive whole, arguments as a JSON OBJECT, usually without id or index: each
 *   becomes one `tool-call-delta` with a generated id, the next index and the arguments
 *   JSON-stringified, so the rest of Orion sees them like any streamed call.
 * - The `done:true` object is the finish, with usage from `prompt_eval_count`/`eval_count`.
 *   Ollama says `done_reason:"stop"` even after tool calls; that is reported as `tool_calls`.
 * - `{"error": "…"}` (a model crash mid-stream) → `provider_error`.
 */
export class OllamaChunkMapper {
  private nextIndex = 0;
  private sawToolCalls = false;
  private done = false;
  private failed = false;

  /** True once the `done` object or an error was seen. */
  get ended(): boolean {
    return this.done || this.failed;
  }

  mapObject(obj: unknown): LlmStreamEvent[] {
    if (this.ended || !isObject(obj)) return [];
    if (obj.error !== undefined && obj.error !== null) {
      const message = typeof obj.error === 'string' ? obj.error : JSON.stringify(obj.error);
      return this.fail({ code: 'provider_error', message: `Provider error: ${message}`, retryable: false });
    }
    const events: LlmStreamEvent[] = [];
    const msg = isObject(obj.message) ? obj.message : {};
    if (typeof msg.thinking === 'string' && msg.thinking) events.push({ type: 'reasoning-delta', text: msg.thinking });
    if (typeof msg.content === 'string' && msg.content) events.push({ type: 'text-delta', text: msg.content });
    for (const tc of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) {
      const fn = isObject(tc) && isObject(tc.function) ? tc.function : undefined;
      if (!fn) continue;
      const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {});
      const id = isObject(tc) && typeof tc.id === 'string' && tc.id ? tc.id : `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      this.sawToolCalls = true;
      events.push({
        type: 'tool-call-delta',
        index: this.nextIndex++,
        id,
        ...(typeof fn.name === 'string' && fn.name ? { name: fn.name } : {}),
        argumentsFragment: args,
      });
    }
    if (obj.done === true) {
      this.done = true;
      const rawReason = typeof obj.done_reason === 'string' ? obj.done_reason : undefined;
      const promptTokens = count(obj.prompt_eval_count);
      const completionTokens = count(obj.eval_count);
      events.push({
        type: 'finish',
        reason: normalizeFinishReason(rawReason, this.sawToolCalls),
        ...(rawReason !== undefined ? { rawReason } : {}),
        usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens },
      });
    }
    return events;
  }

  /** The body ended: an error if the `done` object never came (a cut stream is not a finished one). */
  end(): LlmStreamEvent[] {
    if (this.ended) return [];
    return this.fail({ code: 'invalid_response', message: 'The stream ended before Ollama sent done:true', retryable: true });
  }

  /** A line that is not JSON. */
  invalidLine(line: string): LlmStreamEvent[] {
    return this.fail({ code: 'invalid_response', message: `Unparseable NDJSON line: ${line.slice(0, 200)}`, retryable: false });
  }

  private fail(error: LlmErrorInfo): LlmStreamEvent[] {
    if (this.failed) return [];
    this.failed = true;
    return [{ type: 'error', error }];
  }
}
