import { RunEventStream, type StreamTransport } from '../src/run-stream';

/**
 * A run whose instance died mid-answer: the first connection breaks after part of a phase, the
 * reconnection (Last-Event-ID) reads the survivor's continuation, whose `start` supersedes the
 * chunks of the phase cut short. The stream's `text` is the continued answer once, as `done`'s.
 */
const ids = { requestId: '0f8fad5b-d9cb-469f-a165-70867728950e', projectId: 'default', conversationId: '7c9e6679-7425-40de-944b-e07fc1f90ae7' };
const frame = (seq: number, event: string, data: Record<string, unknown>) => `event: ${event}\nid: ${seq}\ndata: ${JSON.stringify({ ...ids, seq, phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, ...data })}\n\n`;

/** A body that sends `frames`, then breaks (as a connection to an instance that was killed) unless `ends`. */
function body(frames: string[], ends: boolean): Response {
  const enc = new TextEncoder();
  const queue = [...frames];
  // one frame per read, then the end or the break (an error drops whatever is still queued)
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const f = queue.shift();
      if (f !== undefined) c.enqueue(enc.encode(f));
      else if (ends) c.close();
      else c.error(new TypeError('terminated'));
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

describe('RunEventStream.text across a takeover', () => {
  it('drops the chunks a takeover supersedes and keeps the rest, in seq order', async () => {
    const asked: Array<Record<string, string> | undefined> = [];
    const transport: StreamTransport = {
      request: async (_path, init) => {
        asked.push(init.headers);
        return body(
          [
            frame(4, 'start', { protocol: 'two-stage', userMessageId: null, resumed: true, takeover: true, resumeFromPhaseIndex: 2, supersedesFromSeq: 3 }),
            frame(5, 'chunk', { content: 'lo world' }),
            frame(6, 'done', { phase: 'complete', fullContent: 'Hello world', messageId: null, stopReason: 'final_answer', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 2 } }),
          ],
          true,
        );
      },
      runs: { cancel: async () => undefined, pause: async () => undefined },
    };
    const first = () => Promise.resolve(body([frame(1, 'start', { protocol: 'two-stage', userMessageId: null }), frame(2, 'chunk', { content: 'Hel' }), frame(3, 'chunk', { content: 'lo wor' })], false));
    const stream = new RunEventStream(transport, first, { reconnect: { delayMs: 1 } });
    const seen: string[] = [];
    const texts: string[] = [];
    for await (const e of stream) {
      seen.push(e.type);
      texts.push(stream.text);
    }
    expect(seen).toEqual(['start', 'chunk', 'chunk', 'start', 'chunk', 'done']);
    // what a page shows as the events come: the cut-off piece goes when the continuation starts
    expect(texts).toEqual(['', 'Hel', 'Hello wor', 'Hel', 'Hello world', 'Hello world']);
    expect(asked).toEqual([{ 'last-event-id': '3' }]);
    expect(stream.reconnects).toBe(1);
  });

  it('keeps every chunk of a run that was never taken over', async () => {
    const transport: StreamTransport = { request: async () => new Response(null, { status: 204 }), runs: { cancel: async () => undefined, pause: async () => undefined } };
    const open = () =>
      Promise.resolve(
        body(
          [
            frame(1, 'start', { protocol: 'unified', userMessageId: null }),
            frame(2, 'chunk', { content: 'a ' }),
            frame(3, 'chunk', { content: 'b' }),
            frame(4, 'done', { phase: 'complete', fullContent: 'a b', messageId: null, stopReason: 'final_answer', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 1 } }),
          ],
          true,
        ),
      );
    const stream = new RunEventStream(transport, open);
    let done: string | undefined;
    for await (const e of stream) if (e.type === 'done') done = e.fullContent;
    expect(stream.text).toBe(done);
  });
});
