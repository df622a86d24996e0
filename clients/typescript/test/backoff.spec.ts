import { Backoff, retryAfterMs } from '../src/backoff';
import { RunEventStream, type StreamTransport } from '../src/run-stream';

/** The waits a backoff gives, the clock moved on by each, until it gives up (at most `max`). */
function waits(b: Backoff, max = 100, start = 0): number[] {
  const out: number[] = [];
  let now = start;
  for (let w = b.next(now); w !== undefined && out.length < max; w = b.next(now)) {
    out.push(w);
    now += w;
  }
  return out;
}

describe('reconnect backoff', () => {
  it('doubles from delayMs up to maxDelayMs, each wait jittered between half of it and all of it', () => {
    expect(waits(new Backoff({}, () => 1), 8)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    expect(waits(new Backoff({}, () => 0), 4)).toEqual([125, 250, 500, 1000]);
  });

  it('keeps trying for budgetMs (120 s by default), longer than a takeover with the default lease (30 s + a 15 s sweep)', () => {
    const all = waits(new Backoff({}, () => 1), 1000);
    expect(all.reduce((a, b) => a + b, 0)).toBe(120_000);
    // the last wait is cut short so the last try comes at the budget's end
    expect(waits(new Backoff({ budgetMs: 1_000 }, () => 1))).toEqual([250, 500, 250]);
  });

  it('starts over once an event arrived; stops after `retries` tries in a row; `false` never tries', () => {
    const b = new Backoff({ retries: 2 }, () => 1);
    expect(waits(b)).toEqual([250, 500]);
    b.reset();
    expect(b.next(10_000)).toBe(250);
    expect(new Backoff(false).next(0)).toBeUndefined();
  });

  it("waits at least what the server asked: the SSE retry field, a Retry-After", () => {
    const b = new Backoff({}, () => 0);
    b.serverRetry(3_000);
    expect(waits(b, 3)).toEqual([3_000, 3_000, 3_000]);
    expect(new Backoff({}, () => 0).next(0, 1_000)).toBe(1_000);
    expect(retryAfterMs(new Response(null, { status: 503, headers: { 'retry-after': '2' } }))).toBe(2_000);
    expect(retryAfterMs(new Response(null, { status: 503 }))).toBe(0);
  });
});

const ids = { requestId: '0f8fad5b-d9cb-469f-a165-70867728950e', projectId: 'default', conversationId: '7c9e6679-7425-40de-944b-e07fc1f90ae7' };
const frame = (seq: number, event: string, data: Record<string, unknown>) => `event: ${event}\nid: ${seq}\ndata: ${JSON.stringify({ ...ids, seq, phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, ...data })}\n\n`;
const done = (seq: number) => frame(seq, 'done', { phase: 'complete', fullContent: 'Hi', messageId: null, stopReason: 'final_answer', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 1 } });

/** A body that sends `text`, then breaks (a connection cut) unless `ends`. */
function body(text: string, ends: boolean): Response {
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (!sent) {
        sent = true;
        c.enqueue(new TextEncoder().encode(text));
      } else if (ends) c.close();
      else c.error(new TypeError('terminated'));
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

describe('RunEventStream reconnect waits', () => {
  afterEach(() => jest.restoreAllMocks());

  /**
   * Reads a stream whose first connection breaks after a chunk, `answers` answering the
   * reconnections in turn, with delayMs 1: the waits the stream asked for (its timers), in order.
   */
  async function waitsAsked(firstBody: string, answers: Array<() => Response>) {
    const timer = jest.spyOn(globalThis, 'setTimeout');
    const transport: StreamTransport = { request: async () => answers.shift()!(), runs: { cancel: async () => undefined, pause: async () => undefined } };
    const stream = new RunEventStream(transport, async () => body(firstBody, false), { reconnect: { delayMs: 1 } });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    return { types, waits: timer.mock.calls.map(([, ms]) => ms ?? 0).filter((ms) => ms > 0) };
  }
  const opening = `${frame(1, 'start', { protocol: 'unified', userMessageId: null })}${frame(2, 'chunk', { content: 'Hi' })}`;

  it("honours the server's retry field as the least wait before reconnecting", async () => {
    const { types, waits } = await waitsAsked(`retry: 400\n\n${opening}`, [() => body(done(3), true)]);
    expect(types).toEqual(['start', 'chunk', 'done']);
    expect(waits).toEqual([400]);
  });

  it('waits the Retry-After of a 503 (a draining instance) before the next try', async () => {
    const { types, waits } = await waitsAsked(opening, [
      () => new Response('{"error":"shutting_down","message":"draining"}', { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' } }),
      () => body(done(3), true),
    ]);
    expect(types).toEqual(['start', 'chunk', 'done']);
    expect(waits).toEqual([expect.any(Number), 1000]);
    expect(waits[0]).toBeLessThanOrEqual(1);
  });
});
