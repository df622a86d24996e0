import { request } from 'node:http';
import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { waitFor } from '../support/mcp-test-kit';
import { ReplayServer, respond } from '../support/replay-server';
import { scriptedDelay } from '../support/scripted-delay';
import { SseParser, sse, type SseEvent } from '../support/sse-client';

/**
 * A slow client must slow the turn down instead of growing a buffer on the server, and what is
 * stored in run_events must be exactly what was sent.
 */
describe('SSE backpressure and stored events', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // the answer is 4,000 runs of one letter, a content loop by any measure: the detector is off
    // here (LOOP_CONTENT_REPEATS=0), this file is about backpressure, not loops
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', LOOP_CONTENT_REPEATS: '0' });
    ds = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });

  const storedEvents = async (requestId: string) =>
    (await ds.query('SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq', [requestId])) as Array<{ seq: number; type: string; data: Record<string, unknown> }>;

  it('stops reading the model while the client does not read, then delivers everything', async () => {
    const DELTAS = 4000;
    const piece = 'x'.repeat(4000);
    llm.enqueue(respond.turn(Array.from({ length: DELTAS }, (_, i) => ({ text: `${i}:${piece} ` }))));

    const parser = new SseParser();
    const events: SseEvent[] = [];
    let requestId = '';
    let paused = false;
    const done = new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: new URL(t.url).port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            events.push(...parser.push(chunk));
            if (!requestId && events.length) requestId = events[0].data.requestId as string;
            if (!paused && requestId) {
              paused = true;
              res.pause(); // a client that stops reading, for a second and a half
              void scriptedDelay(1500).then(async () => {
                try {
                  // deltas, not events: a chunk may carry several (those that waited together)
                  const storedWhilePaused = (await storedEvents(requestId)).filter((e) => e.type === 'chunk').reduce((n, e) => n + String(e.data.content).split(piece).length - 1, 0);
                  // the server produced only what the socket buffers could take, not the whole answer
                  expect(storedWhilePaused).toBeLessThan(DELTAS / 2);
                  expect(llm.chatRequests).toHaveLength(1);
                  res.resume();
                } catch (e) {
                  reject(e);
                }
              });
            }
          });
          res.on('end', resolve);
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ content: 'A very long answer, please' }));
    });
    await done;
    const chunks = events.filter((e) => e.event === 'chunk');
    // every delta, in order (how many chunks carry them depends on how they waited)
    expect(chunks.map((c) => c.data.content).join('')).toBe(Array.from({ length: DELTAS }, (_, i) => `${i}:${piece} `).join(''));
    expect(events.at(-1)!.event).toBe('done');
    expect(events.at(-1)!.data.stopReason).toBe('final_answer');
    // The next turn starts once this one's answer reads back. Started at once, on a loaded machine,
    // the next turn got no event at all (not even start) within 120 s, on PGlite, on this release
    // and the one before: a race not yet found, written in the README's Limitations.
    const conversationId = events[0].data.conversationId as string;
    await waitFor(async () => {
      const messages = (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string }>;
      return messages.some((m) => m.role === 'assistant');
    }, 10_000, 'the stored answer');
  }, 60_000);

  it('stores exactly the events it sent, in order, with no gaps', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Let me look. ' }, { toolCall: { name: 'list_files', args: {} } }]),
      respond.turn(Array.from({ length: 100 }, (_, i) => ({ text: `w${i} ` }))),
    );
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'list' } });
    const requestId = res.events[0].data.requestId as string;
    const stored = await storedEvents(requestId);
    expect(stored.map((r) => ({ seq: r.seq, type: r.type, data: r.data }))).toEqual(
      res.events.map((e) => ({ seq: Number(e.id), type: e.event, data: e.data })),
    );
    expect(stored.map((r) => r.seq)).toEqual(stored.map((_, i) => i + 1));
  });
});
