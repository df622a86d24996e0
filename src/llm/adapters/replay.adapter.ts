import { sleep } from '../../common/util/abort.util';
import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmRequest, LlmStreamEvent, LlmUsage } from '../llm-adapter.port';
import { collectCompletion } from '../collect-completion';
import { estimateUsage } from '../usage-estimate';
import { DEFAULT_REPLAY_TRANSCRIPTS, readReplayContext, type ReplayReply, type ReplayTranscript } from './replay';

export interface ReplayAdapterOptions {
  /** LLM_CONTEXT_WINDOW, reported by capabilities() */
  contextWindow: number;
  /** pause between streamed words; 15 ms reads like a fast model, tests pass 0 */
  delayMs?: number;
  /** the scripts; default DEFAULT_REPLAY_TRANSCRIPTS */
  transcripts?: readonly ReplayTranscript[];
}

/** Every replayed text starts with this, so nobody mistakes a replay for a model's answer. */
export const REPLAY_PREFIX = '[replay] ';

/** The common "4 characters ≈ 1 token" estimate (the same one the context budget uses). */
const CHARS_PER_TOKEN = 4;

const ABORTED = { code: 'aborted', message: 'The LLM request was aborted', retryable: false } as const;

/**
 * The embedded default provider for people with no model: deterministic scripted replies
 * (see `./replay`) streamed like a model would — word-sized text deltas with a small delay,
 * tool calls as `tool-call-delta`s, one `finish` with estimated usage — so every route works
 * end to end. Every text it produces starts with "[replay] ".
 */
export class ReplayAdapter implements LlmAdapter {
  readonly provider = 'replay';
  readonly model = 'replay';
  private readonly delayMs: number;
  private readonly transcripts: readonly ReplayTranscript[];

  constructor(private readonly options: ReplayAdapterOptions) {
    this.delayMs = options.delayMs ?? 15;
    this.transcripts = options.transcripts ?? DEFAULT_REPLAY_TRANSCRIPTS;
  }

  stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    return this.events(request, signal, this.delayMs, false);
  }

  /** The same script, at once; only the tool-only modes' decision asks this way, so transcripts may tell it apart. */
  complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmCompletion> {
    return collectCompletion(this.events(request, signal, 0, true));
  }

  async capabilities(): Promise<LlmCapabilities> {
    return { provider: 'replay', model: 'replay', toolCalling: true, contextWindow: this.options.contextWindow, replay: true };
  }

  /** The scripted reply for a request (exposed for tests and the debug panel). */
  replyFor(request: LlmRequest, options: { decision?: boolean } = {}): ReplayReply {
    const ctx = readReplayContext(request, options);
    const transcript = this.transcripts.find((t) => t.matches(ctx));
    const reply = transcript?.reply(ctx) ?? { text: 'No transcript matched this request.' };
    // toolChoice 'none' (forced final answers) must never get a call, whatever a transcript says.
    const toolCalls = (reply.toolCalls ?? []).filter((c) => ctx.callableTools.includes(c.name));
    const text = reply.text === undefined ? undefined : reply.text.startsWith('[replay]') ? reply.text : REPLAY_PREFIX + reply.text;
    if (!text && toolCalls.length === 0) return { text: `${REPLAY_PREFIX}(nothing to say)` };
    return { ...(text ? { text } : {}), ...(toolCalls.length ? { toolCalls } : {}) };
  }

  private async *events(request: LlmRequest, signal: AbortSignal | undefined, delayMs: number, decision: boolean): AsyncGenerator<LlmStreamEvent> {
    const reply = this.replyFor(request, { decision });
    const previousCalls = readReplayContext(request).previousToolCalls;
    const pause = async (): Promise<boolean> => {
      if (signal?.aborted) return false;
      if (delayMs <= 0) return true;
      try {
        await sleep(delayMs, signal);
        return true;
      } catch {
        return false;
      }
    };

    for (const word of reply.text?.match(/\S+\s*|\s+/g) ?? []) {
      if (!(await pause())) {
        yield { type: 'error', error: ABORTED };
        return;
      }
      yield { type: 'text-delta', text: word };
    }
    const calls = reply.toolCalls ?? [];
    for (const [index, call] of calls.entries()) {
      if (!(await pause())) {
        yield { type: 'error', error: ABORTED };
        return;
      }
      yield { type: 'tool-call-delta', index, id: `call_replay_${previousCalls + index + 1}`, name: call.name, argumentsFragment: JSON.stringify(call.arguments) };
    }
    if (signal?.aborted) {
      yield { type: 'error', error: ABORTED };
      return;
    }
    yield { type: 'finish', reason: calls.length > 0 ? 'tool_calls' : 'stop', rawReason: calls.length > 0 ? 'tool_calls' : 'stop', usage: replayUsage(request, reply) };
  }
}

/** A replay has no provider to count tokens: the tokenizer's count, marked estimated as for any provider that reports none. */
function replayUsage(request: LlmRequest, reply: ReplayReply): LlmUsage {
  return estimateUsage(request, reply.text ?? '', (reply.toolCalls ?? []).map((c) => c.name + JSON.stringify(c.arguments)));
}
