import type { LlmStreamEvent } from '../../src/llm/llm-adapter.port';
import { ModelStream, type ModelStreamOptions, type ModelStreamResult } from '../../src/orchestration/model-stream';
import { ScriptedLlm } from './scripted-llm';

const ASK = { messages: [{ role: 'user' as const, content: 'go' }] };

/** Runs one model step as a protocol does, over scripted events: the chunks it streamed, how it ended, and the adapter. */
export async function modelStep(events: LlmStreamEvent[], opts: ModelStreamOptions = {}, signal = new AbortController().signal) {
  const llm = new ScriptedLlm([events]);
  const stream = new ModelStream(llm, ASK, signal, opts);
  const it = stream.step();
  const chunks: string[] = [];
  let r = await it.next();
  while (!r.done) {
    chunks.push(r.value.content);
    r = await it.next();
  }
  const res: ModelStreamResult = r.value;
  return { chunks, res, llm };
}
