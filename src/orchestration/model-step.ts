/**
 * The iterator a protocol's model step runs (`yield* stream.step()`): each adapter event handed
 * to its ModelStream, the answer text that comes out yielded as a `chunk`, and how the response
 * ended returned once it is over.
 */
import type { LlmStreamEvent } from '../llm/llm-adapter.port';
import type { ModelStream } from './model-stream';
import type { ModelStreamResult } from './model-stream-result';

export type ChunkEvent = { type: 'chunk'; content: string };

/** A plain iterator rather than a generator: one generator level less per text delta on the hot path (bench:protocol). */
export class ModelStep implements AsyncIterableIterator<ChunkEvent, ModelStreamResult, undefined> {
  constructor(
    private readonly stream: ModelStream,
    private readonly events: AsyncIterator<LlmStreamEvent>,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** the adapter's stream ended and its last held text was handed out */
  private over = false;

  // .then() rather than an async function: one promise per delta, no extra frame (hot path)
  next(): Promise<IteratorResult<ChunkEvent, ModelStreamResult>> {
    if (this.stream.stopped || this.over) return this.return();
    return this.events.next().then(this.onEvent, this.onError);
  }

  private readonly onEvent = (r: IteratorResult<LlmStreamEvent>): IteratorResult<ChunkEvent, ModelStreamResult> | Promise<IteratorResult<ChunkEvent, ModelStreamResult>> => {
    if (r.done) {
      const rest = this.stream.end();
      if (rest === undefined) return { done: true, value: this.stream.close() };
      this.over = true;
      return { done: false, value: { type: 'chunk', content: this.stream.withLead(rest) } };
    }
    const text = this.stream.accept(r.value);
    return text !== undefined ? { done: false, value: { type: 'chunk', content: this.stream.withLead(text) } } : this.next();
  };

  private readonly onError = (err: unknown): IteratorResult<ChunkEvent, ModelStreamResult> => {
    this.stream.fail(err);
    return { done: true, value: this.stream.close() };
  };

  /** Releases the model request (the consumer stopped early, or the first complete call came). */
  async return(): Promise<IteratorResult<ChunkEvent, ModelStreamResult>> {
    try {
      await this.events.return?.();
    } catch (err) {
      this.stream.fail(err);
    }
    return { done: true, value: this.stream.close() };
  }
}
