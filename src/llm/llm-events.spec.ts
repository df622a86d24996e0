import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmRequest, LlmStreamEvent } from './llm-adapter.port';
import { LlmEvents, reportFirstChunk, type LlmEvent } from './llm-events';

class ListAdapter implements LlmAdapter {
  readonly provider = 'test';
  readonly model = 'm';
  streams = 0;
  closed = 0;
  constructor(
    private readonly events: LlmStreamEvent[],
    private readonly failAfter?: number,
  ) {}
  async *stream(): AsyncIterable<LlmStreamEvent> {
    this.streams++;
    try {
      for (let i = 0; i < this.events.length; i++) {
        if (i === this.failAfter) throw new Error('connection reset');
        yield this.events[i];
      }
    } finally {
      this.closed++;
    }
  }
  async complete(): Promise<LlmCompletion> {
    throw new Error('unused');
  }
  async capabilities(): Promise<LlmCapabilities> {
    return { provider: 'test', model: 'm', toolCalling: true, contextWindow: 1, replay: false };
  }
}

const request: LlmRequest = { messages: [{ role: 'user', content: 'hi' }], requestId: 'req-1' };
const EVENTS: LlmStreamEvent[] = [
  { type: 'reasoning-delta', text: 'hmm' },
  { type: 'text-delta', text: 'Hel' },
  { type: 'text-delta', text: 'lo' },
  { type: 'finish', reason: 'stop' },
];

function setup(events: LlmStreamEvent[], capture: boolean, failAfter?: number) {
  const bus = new LlmEvents();
  bus.captureContent = capture;
  const seen: LlmEvent[] = [];
  bus.on((e) => seen.push(e));
  const inner = new ListAdapter(events, failAfter);
  return { adapter: reportFirstChunk(inner, bus), inner, seen };
}

describe('reportFirstChunk', () => {
  it('passes every event on, reports the first text or tool-call delta once, and the captured text once at the end', async () => {
    const { adapter, inner, seen } = setup(EVENTS, true);
    expect(adapter).toBeInstanceOf(ListAdapter);
    const got: LlmStreamEvent[] = [];
    for await (const ev of adapter.stream(request)) {
      got.push(ev);
      // reported as it passes, before the consumer has the event
      if (ev.type === 'text-delta') expect(seen.filter((e) => e.type === 'first_chunk')).toHaveLength(1);
      else if (ev.type === 'reasoning-delta') expect(seen).toEqual([]);
    }
    expect(got).toEqual(EVENTS);
    expect(seen.map((e) => e.type)).toEqual(['first_chunk', 'content']);
    expect(seen[0]).toMatchObject({ provider: 'test', model: 'm', requestId: 'req-1' });
    expect(seen[1]).toMatchObject({ text: 'Hello', messages: request.messages });
    expect(inner.closed).toBe(1);
  });

  it("asks the adapter for its stream only when iterated, and reports nothing when closed before it began", async () => {
    const { adapter, inner, seen } = setup(EVENTS, true);
    const it = adapter.stream(request)[Symbol.asyncIterator]();
    expect(inner.streams).toBe(0);
    await it.return?.();
    expect(inner.streams).toBe(0);
    expect(seen).toEqual([]);
    expect(await it.next()).toEqual({ done: true, value: undefined });
  });

  it("closes the adapter's stream when the consumer stops early, then reports the text so far once", async () => {
    const { adapter, inner, seen } = setup(EVENTS, true);
    for await (const ev of adapter.stream(request)) if (ev.type === 'text-delta') break;
    expect(inner.closed).toBe(1);
    expect(seen.map((e) => e.type)).toEqual(['first_chunk', 'content']);
    expect(seen[1]).toMatchObject({ text: 'Hel' });
  });

  it("passes an adapter's throw on, after reporting the text so far, and is over afterwards", async () => {
    const { adapter, seen } = setup(EVENTS, true, 2);
    const it = adapter.stream(request)[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    await expect(it.next()).rejects.toThrow('connection reset');
    expect(seen.map((e) => e.type)).toEqual(['first_chunk', 'content']);
    expect(await it.next()).toEqual({ done: true, value: undefined });
    expect(seen).toHaveLength(2);
  });

  it('keeps no text and reports no content when contents are not captured', async () => {
    const { adapter, seen } = setup(EVENTS, false);
    for await (const _ of adapter.stream(request)) void _;
    expect(seen.map((e) => e.type)).toEqual(['first_chunk']);
  });
});
