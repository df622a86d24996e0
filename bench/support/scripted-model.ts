import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmRequest, LlmStreamEvent } from '../../src/llm/llm-adapter.port';

/** Text deltas of the turn's answer. */
export const TEXT_DELTAS = 240;

// ---- the scripted model: 3 responses per turn (call, call, answer with 240 deltas) ----
function toolResponse(name: string, args: string): LlmStreamEvent[] {
  const out: LlmStreamEvent[] = [{ type: 'text-delta', text: 'Checking. ' }, { type: 'tool-call-delta', index: 0, id: `call_${name}`, name, argumentsFragment: '' }];
  for (let i = 0; i < args.length; i += 4) out.push({ type: 'tool-call-delta', index: 0, argumentsFragment: args.slice(i, i + 4) });
  out.push({ type: 'finish', reason: 'tool_calls', usage: { promptTokens: 100, completionTokens: 20, totalTokens: 120 } });
  return out;
}
const RESPONSES: LlmStreamEvent[][] = [
  toolResponse('list_files', '{"path":"docs","recursive":false}'),
  toolResponse('read_file', '{"path":"docs/roadmap.md","maxBytes":4096}'),
  [
    ...Array.from({ length: TEXT_DELTAS }, (_, i): LlmStreamEvent => ({ type: 'text-delta', text: `word${i} ` })),
    { type: 'finish', reason: 'stop', usage: { promptTokens: 300, completionTokens: 240, totalTokens: 540 } },
  ],
];

/** The benchmarks' model: per turn, list_files, then read_file, then a 240-delta answer; no delays. */
export class ScriptedAdapter implements LlmAdapter {
  readonly provider = 'bench';
  readonly model = 'bench';
  private n = 0;
  async *stream(_req: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    const events = RESPONSES[this.n++ % RESPONSES.length];
    for (const ev of events) {
      if (signal?.aborted) return;
      yield ev;
    }
  }
  async complete(): Promise<LlmCompletion> {
    throw new Error('not used');
  }
  async capabilities(): Promise<LlmCapabilities> {
    return { provider: 'bench', model: 'bench', toolCalling: true, contextWindow: 32768, replay: false };
  }
}

