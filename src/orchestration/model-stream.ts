import type { LlmAdapter, LlmErrorInfo, LlmRequest, LlmUsage } from '../llm/llm-adapter.port';
import { ToolCallAccumulator, type CompletedToolCall, type InvalidToolCall } from '../llm/tool-call-accumulator';
import { anySignal } from '../common/util/abort.util';

/** How one streamed model response ended. */
export interface ModelStreamResult {
  text: string;
  reasoningChars: number;
  /** complete calls, index order (only the first when stopping at the first complete call) */
  calls: CompletedToolCall[];
  /** calls whose arguments never became a JSON object, or that had no name */
  invalid: InvalidToolCall[];
  finishReason?: string;
  usage?: LlmUsage;
  /** set when the model or the transport failed (not when we stopped it) */
  error?: LlmErrorInfo;
  /** we aborted the upstream request because the first complete call was known */
  stoppedEarly: boolean;
}

export interface ModelStreamOptions {
  /** two-stage: end the response at the first complete tool call and abort upstream */
  stopAtFirstCompleteCall?: boolean;
  /** forced final answers: tool-call fragments are dropped */
  ignoreToolCalls?: boolean;
}

/**
 * Streams one model response: yields its text as chunks, accumulates tool calls by structural
 * boundary, and returns how it ended (`const r = yield* streamModel(...)`). Reasoning text is
 * counted, never shown as answer text.
 */
export async function* streamModel(
  llm: LlmAdapter,
  request: LlmRequest,
  signal: AbortSignal,
  opts: ModelStreamOptions = {},
): AsyncGenerator<{ type: 'chunk'; content: string }, ModelStreamResult, undefined> {
  const acc = new ToolCallAccumulator();
  const local = new AbortController();
  const result: ModelStreamResult = { text: '', reasoningChars: 0, calls: [], invalid: [], stoppedEarly: false };
  const iterator = llm.stream(request, anySignal(signal, local.signal))[Symbol.asyncIterator]();
  try {
    while (true) {
      const { value: ev, done } = await iterator.next();
      if (done) break;
      switch (ev.type) {
        case 'text-delta':
          if (ev.text) {
            result.text += ev.text;
            yield { type: 'chunk', content: ev.text };
          }
          break;
        case 'reasoning-delta':
          result.reasoningChars += ev.text.length;
          break;
        case 'tool-call-delta': {
          if (opts.ignoreToolCalls) break;
          const completed = acc.push(ev);
          if (opts.stopAtFirstCompleteCall && completed.length > 0) {
            result.calls = [completed[0]];
            result.stoppedEarly = true;
            local.abort(new Error('first complete tool call received'));
            return result;
          }
          break;
        }
        case 'finish':
          result.finishReason = ev.rawReason ?? ev.reason;
          result.usage = ev.usage;
          acc.finish();
          break;
        case 'error':
          // our own early stop is not an error; the caller's abort is reported as `aborted`
          if (!local.signal.aborted) result.error = ev.error;
          break;
      }
    }
  } finally {
    await iterator.return?.(undefined).catch(() => undefined);
  }
  // a clean end of stream is a boundary too; a failed stream's open calls are never run
  if (!result.error) acc.finish();
  result.calls = opts.stopAtFirstCompleteCall ? acc.completed.slice(0, 1) : [...acc.completed];
  result.invalid = [...acc.invalid];
  return result;
}
