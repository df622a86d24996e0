import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmRequest, LlmStreamEvent } from '../../src/llm/llm-adapter.port';
import { scriptedDelay } from './scripted-delay';

/** One scripted model response: its events, or a function of the request that returns them. */
export type ScriptedResponse = LlmStreamEvent[] | ((req: LlmRequest) => LlmStreamEvent[]);

/** Builders for scripted stream events. */
export const say = (...parts: string[]): LlmStreamEvent[] => parts.map((text) => ({ type: 'text-delta', text }));
export const finish = (reason: 'stop' | 'tool_calls' | 'length' = 'stop', usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 }): LlmStreamEvent => ({
  type: 'finish',
  reason,
  usage,
});
/** A tool call streamed as fragments of `fragmentSize` characters (1 = one character per delta). */
export function callTool(index: number, name: string, args: string, fragmentSize = 1_000_000, id = `call_${index}_${name}`): LlmStreamEvent[] {
  const out: LlmStreamEvent[] = [{ type: 'tool-call-delta', index, id, name, argumentsFragment: '' }];
  for (let i = 0; i < args.length; i += fragmentSize) out.push({ type: 'tool-call-delta', index, argumentsFragment: args.slice(i, i + fragmentSize) });
  return out;
}
export const answer = (text: string): LlmStreamEvent[] => [...say(text), finish('stop')];
export const toolTurn = (name: string, args: string, preText?: string): LlmStreamEvent[] => [
  ...(preText ? say(preText) : []),
  ...callTool(0, name, args),
  finish('tool_calls'),
];

/**
 * A model that plays a script: response N answers call N. Records every request (and whether
 * its signal was aborted), and fails loudly on a call the script did not expect, so a protocol
 * that calls the model once too often is a test failure, not a hang.
 */
export class ScriptedLlm implements LlmAdapter {
  readonly provider = 'scripted';
  readonly model = 'scripted-model';
  readonly requests: LlmRequest[] = [];
  readonly abortedStreams: number[] = [];
  /** events actually consumed per call (to see where a protocol stopped reading) */
  readonly consumed: number[] = [];

  constructor(
    private readonly script: ScriptedResponse[],
    private readonly opts: { toolCalling?: boolean; delayMs?: number } = {},
  ) {}

  get calls(): number {
    return this.requests.length;
  }

  async *stream(req: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    const n = this.requests.length;
    this.requests.push(structuredClone(req));
    const step = this.script[n];
    if (!step) throw new Error(`ScriptedLlm: unexpected model call #${n + 1} (script has ${this.script.length})`);
    const events = typeof step === 'function' ? step(req) : step;
    this.consumed[n] = 0;
    for (const ev of events) {
      if (signal?.aborted) {
        this.abortedStreams.push(n);
        yield { type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } };
        return;
      }
      if (this.opts.delayMs) await scriptedDelay(this.opts.delayMs);
      this.consumed[n]++;
      yield ev;
    }
  }

  async complete(req: LlmRequest): Promise<LlmCompletion> {
    let content = '';
    const calls: Record<number, { id: string; name: string; arguments: string }> = {};
    let reason: LlmCompletion['finishReason'] = 'stop';
    for await (const ev of this.stream(req)) {
      if (ev.type === 'text-delta') content += ev.text;
      if (ev.type === 'tool-call-delta') {
        const c = (calls[ev.index] ??= { id: ev.id ?? `call_${ev.index}`, name: ev.name ?? '', arguments: '' });
        c.arguments += ev.argumentsFragment;
      }
      if (ev.type === 'finish') reason = ev.reason;
    }
    return { content, toolCalls: Object.values(calls), finishReason: reason };
  }

  async capabilities(): Promise<LlmCapabilities> {
    return { provider: this.provider, model: this.model, toolCalling: this.opts.toolCalling ?? true, contextWindow: 32768, replay: false };
  }
}
