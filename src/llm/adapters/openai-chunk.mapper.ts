import type { LateDeltas, LlmErrorInfo, LlmStreamEvent, LlmUsage } from '../llm-adapter.port';
import { normalizeFinishReason } from '../finish-reason';
import { ToolCallIndexResolver } from '../tool-call-index';
import type { SseMessage } from '../wire/sse-decoder';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * Reads an OpenAI-style `usage` object (or Groq's `x_groq.usage`); undefined when it has no counts.
 * Accepts `input_tokens`/`output_tokens` too, which some proxies use.
 */
export function readOpenAiUsage(chunk: Json): LlmUsage | undefined {
  const groq = isObject(chunk.x_groq) ? chunk.x_groq.usage : undefined;
  const u = isObject(chunk.usage) ? chunk.usage : isObject(groq) ? groq : undefined;
  if (!u) return undefined;
  const prompt = num(u.prompt_tokens) ?? num(u.input_tokens);
  const completion = num(u.completion_tokens) ?? num(u.output_tokens);
  if (prompt === undefined && completion === undefined) return undefined;
  const promptTokens = prompt ?? 0;
  const completionTokens = completion ?? 0;
  const reasoning = isObject(u.completion_tokens_details) ? num(u.completion_tokens_details.reasoning_tokens) : undefined;
  const cached = isObject(u.prompt_tokens_details) ? num(u.prompt_tokens_details.cached_tokens) : undefined;
  return {
    promptTokens,
    completionTokens,
    totalTokens: num(u.total_tokens) ?? promptTokens + completionTokens,
    ...(reasoning !== undefined ? { reasoningTokens: reasoning } : {}),
    ...(cached !== undefined ? { cachedTokens: cached } : {}),
  };
}

/**
 * An error object found inside a stream (OpenRouter's inline `error`, Groq's `event: error`)
 * as a `provider_error`. The HTTP-like status, when the provider gives one, decides `retryable`.
 */
export function providerErrorInfo(error: unknown): LlmErrorInfo {
  const e = isObject(error) ? error : { message: typeof error === 'string' ? error : JSON.stringify(error) };
  const status = num(e.status_code) ?? num(e.status) ?? num(e.code);
  const label = nonEmpty(e.code) ? e.code : nonEmpty(e.type) ? e.type : undefined;
  const raw = nonEmpty(e.message) ? e.message : JSON.stringify(e);
  const message = `Provider error${label ? ` (${label})` : ''}: ${raw.length > 1000 ? `${raw.slice(0, 1000)}…` : raw}`;
  return { code: 'provider_error', message, retryable: status === 429 || (status !== undefined && status >= 500), ...(status !== undefined ? { status } : {}) };
}

/**
 * Turns decoded Chat Completions SSE messages into the port's stream events.
 *
 * - `delta.content` → text; `delta.reasoning_content` (DeepSeek, xAI) or `delta.reasoning`
 *   (OpenRouter, Groq, Cerebras) → reasoning, never text; Mistral's content-part arrays too.
 * - `delta.tool_calls` → `tool-call-delta` with a dense index (see ToolCallIndexResolver; Mistral
 *   sends no index). Fragments that carry nothing (vLLM repeats the call with `arguments: ""`
 *   in its finish chunk, Qwen sends an empty tail) are dropped.
 * - `finish_reason` and `usage` are only remembered: usage may come after the finish chunk (a
 *   `choices: []` chunk) or on every chunk (vLLM), so {@link end} emits exactly one `finish`
 *   carrying the last usage seen.
 * - the first `finish_reason` ends the choice: a delta that comes for it later (text, reasoning,
 *   a tool call after `finish_reason: "stop"`) is dropped and only counted, on the `finish`
 *   event's `ignoredAfterFinish`. Because `finish` waits for the end of the body, dropping them
 *   here is what keeps such a call from completing and running.
 * - an `error` object in a chunk (OpenRouter, after any content of that chunk) or an
 *   `event: error` message (Groq) → one `error` event, after which the stream is over.
 */
export class OpenAiChunkMapper {
  private readonly indexer = new ToolCallIndexResolver();
  private finishRaw: string | undefined;
  private usage: LlmUsage | undefined;
  private sawToolCalls = false;
  private late: LateDeltas | undefined;
  private sawDone = false;
  private failed = false;

  /** True after `[DONE]` or an error: nothing more should be read. */
  get ended(): boolean {
    return this.sawDone || this.failed;
  }

  /** Maps one SSE message. */
  mapMessage(msg: SseMessage): LlmStreamEvent[] {
    if (this.ended) return [];
    const data = msg.data.trim();
    if (data === '') return [];
    if (data === '[DONE]') {
      this.sawDone = true;
      return [];
    }
    const payloads = parsePayloads(data);
    if (payloads === 'done-inside') {
      // Several chunks and the sentinel in one message (a server that forgot the blank lines).
      const events = data
        .split('\n')
        .filter((l) => l.trim() !== '' && l.trim() !== '[DONE]')
        .flatMap((l) => this.mapChunk(JSON.parse(l)));
      this.sawDone = !this.failed;
      return events;
    }
    if (!payloads) {
      return this.fail({ code: 'invalid_response', message: `Unparseable stream data: ${data.slice(0, 200)}`, retryable: false });
    }
    if (msg.event === 'error') {
      const p = payloads[0];
      return this.fail(providerErrorInfo(isObject(p) && p.error !== undefined ? p.error : p));
    }
    // one chunk per message is the rule: its events as they are, without flatMap's copy
    return payloads.length === 1 ? this.mapChunk(payloads[0]) : payloads.flatMap((p) => this.mapChunk(p));
  }

  /** Maps one parsed chunk object. */
  mapChunk(chunk: unknown): LlmStreamEvent[] {
    if (this.ended || !isObject(chunk)) return [];
    const events: LlmStreamEvent[] = [];
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      // n > 1 is never requested; a stray second choice must not interleave with the first.
      if (!isObject(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
      // A few servers put the increment under `message` instead of `delta` in stream chunks.
      const delta = isObject(choice.delta) ? choice.delta : isObject(choice.message) ? choice.message : undefined;
      // a delta in the finish chunk itself still belongs to the response; one after it does not
      if (delta && this.finishRaw === undefined) {
        if (this.mapDelta(delta, events)) this.sawToolCalls = true;
      } else if (delta) this.countLate(delta);
      if (nonEmpty(choice.finish_reason)) this.finishRaw ??= choice.finish_reason;
    }
    const usage = readOpenAiUsage(chunk);
    if (usage) this.usage = usage;
    if (chunk.error !== undefined && chunk.error !== null && chunk.error !== false) {
      events.push(...this.fail(providerErrorInfo(chunk.error)));
    }
    return events;
  }

  /**
   * The end of the body: the one `finish` event, or an `invalid_response` error when the stream
   * stopped with neither a finish_reason nor `[DONE]` (a truncated response must not pass for a
   * complete one). Returns nothing after an error.
   */
  end(): LlmStreamEvent[] {
    if (this.failed) return [];
    if (this.finishRaw === undefined && !this.sawDone) {
      return this.fail({ code: 'invalid_response', message: 'The stream ended before the model finished (no finish_reason, no [DONE])', retryable: true });
    }
    return [
      {
        type: 'finish',
        reason: normalizeFinishReason(this.finishRaw, this.sawToolCalls),
        ...(this.finishRaw !== undefined ? { rawReason: this.finishRaw } : {}),
        ...(this.usage ? { usage: this.usage } : {}),
        ...(this.late ? { ignoredAfterFinish: this.late } : {}),
      },
    ];
  }

  /** A delta after the finish_reason: mapped only to count what it carried, then dropped. */
  private countLate(delta: Json): void {
    const dropped: LlmStreamEvent[] = [];
    this.mapDelta(delta, dropped);
    if (dropped.length === 0) return; // an empty delta (`{}`, `content: ""`) carries nothing
    const late = (this.late ??= { text: 0, reasoning: 0, toolCalls: 0 });
    for (const e of dropped) {
      if (e.type === 'text-delta') late.text += 1;
      else if (e.type === 'reasoning-delta') late.reasoning += 1;
      else if (e.type === 'tool-call-delta') late.toolCalls += 1;
    }
  }

  /** Appends the delta's events; true when it carried a tool call. */
  private mapDelta(delta: Json, events: LlmStreamEvent[]): boolean {
    const reasoning = nonEmpty(delta.reasoning_content) ? delta.reasoning_content : nonEmpty(delta.reasoning) ? delta.reasoning : undefined;
    if (reasoning) events.push({ type: 'reasoning-delta', text: reasoning });
    if (nonEmpty(delta.content)) events.push({ type: 'text-delta', text: delta.content });
    else if (Array.isArray(delta.content)) mapContentParts(delta.content, events);
    if (nonEmpty(delta.refusal)) events.push({ type: 'text-delta', text: delta.refusal });

    const calls: unknown[] = Array.isArray(delta.tool_calls) ? delta.tool_calls : [];
    // The deprecated `function_call` delta (old servers): one call, no id.
    if (isObject(delta.function_call)) calls.push({ function: delta.function_call });
    let sawCall = false;
    for (const tc of calls) {
      if (!isObject(tc)) continue;
      const fn = isObject(tc.function) ? tc.function : {};
      const id = nonEmpty(tc.id) ? tc.id : undefined;
      const name = nonEmpty(fn.name) ? fn.name : undefined;
      const args = typeof fn.arguments === 'string' ? fn.arguments : isObject(fn.arguments) ? JSON.stringify(fn.arguments) : '';
      if (!id && !name && args === '') continue;
      const index = this.indexer.resolve({ index: tc.index, id, name, argumentsFragment: args });
      sawCall = true;
      events.push({ type: 'tool-call-delta', index, ...(id ? { id } : {}), ...(name ? { name } : {}), argumentsFragment: args });
    }
    return sawCall;
  }

  private fail(error: LlmErrorInfo): LlmStreamEvent[] {
    if (this.failed) return [];
    this.failed = true;
    return [{ type: 'error', error }];
  }
}

/** Mistral (magistral) streams content as parts: `{type:'text', text}` and `{type:'thinking', thinking:[…]}`. */
function mapContentParts(parts: unknown[], events: LlmStreamEvent[]): void {
  for (const part of parts) {
    if (!isObject(part)) continue;
    if (part.type === 'text' && nonEmpty(part.text)) events.push({ type: 'text-delta', text: part.text });
    if (part.type === 'thinking') {
      const inner = Array.isArray(part.thinking) ? part.thinking : [part.thinking];
      const text = inner.map((t) => (isObject(t) && typeof t.text === 'string' ? t.text : typeof t === 'string' ? t : '')).join('');
      if (text) events.push({ type: 'reasoning-delta', text });
    }
  }
}

/**
 * One SSE message normally holds one JSON chunk. A server that forgets the blank line between
 * messages produces several `data:` lines in one message; each line is then a chunk of its own.
 */
function parsePayloads(data: string): unknown[] | 'done-inside' | undefined {
  try {
    return [JSON.parse(data)];
  } catch {
    if (!data.includes('\n')) return undefined;
    try {
      const lines = data.split('\n').map((l) => l.trim()).filter((l) => l !== '');
      const chunks = lines.filter((l) => l !== '[DONE]').map((l) => JSON.parse(l) as unknown);
      return lines.includes('[DONE]') ? 'done-inside' : chunks;
    } catch {
      return undefined;
    }
  }
}
