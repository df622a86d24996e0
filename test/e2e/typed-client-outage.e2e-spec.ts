import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createOrion, OrionStreamError, type Orion, type RunEvent, type RunEventOf } from '../../clients/typescript/src';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { openAiSseFrames, type ScriptStep } from '../support/llm-wire';
import { ReplayServer, respond, type ScriptedResponse } from '../support/replay-server';

const KEY = 'typed-client-outage-key';
/** Longer than the client's whole reconnect budget before (5 tries, 250 ms × try apart: 3.75 s). */
const OUTAGE_MS = 6_000;

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** A model answer that streams up to the frame with `holdAfter`, then waits for `held`. */
function heldTurn(steps: ScriptStep[], holdAfter: string, held: Promise<void>): ScriptedResponse {
  return respond.handler(async (_req, res) => {
    const frames = openAiSseFrames(steps).map((f) => ('data' in f ? `data: ${f.data}\n\n` : `: ${f.comment}\n\n`));
    const at = frames.findIndex((f) => f.includes(holdAfter)) + 1;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const f of frames.slice(0, at)) res.write(f);
    await held;
    if (res.destroyed) return;
    for (const f of frames.slice(at)) res.write(f);
    res.end();
  });
}

/**
 * A TCP proxy in front of the service that can go away (its connections cut, its port refusing
 * connections, as a service that died or restarts) and come back on the same port. It keeps the
 * head of each request it forwarded.
 */
async function startProxy(target: string) {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  const requests: string[] = [];
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: hostname, port: Number(port) });
    open.add(client).add(upstream);
    client.once('data', (head: Buffer) => requests.push(head.toString('latin1').split('\r\n\r\n')[0]));
    client.pipe(upstream).pipe(client);
    const end = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const at = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${at}`,
    requests,
    down: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      await closed;
    },
    up: () => new Promise<void>((resolve) => server.listen(at, '127.0.0.1', resolve)),
    listening: () => server.listening,
    close: () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
  };
}

const seqs = (events: RunEvent[]) => events.map((e) => e.seq);
const oneToN = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const text = (events: RunEvent[]) => events.filter((e): e is RunEventOf<'chunk'> => e.type === 'chunk').map((e) => e.content).join('');

/**
 * The typed client outlives an outage longer than a takeover's (issue 44: another instance
 * continues a run once its lease expired and a sweep saw it, up to RUN_LEASE_MS × 1.5): the
 * service is unreachable for 6 s mid-run and the client, with its default reconnect options,
 * picks the run up from its last seq when it comes back, every event once. A budget runs out
 * with OrionStreamError; an abort stops the waiting at once.
 */
describe(`the typed client through an outage of the service (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let t: TestApp;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let orion: Orion;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', API_KEYS: KEY });
    proxy = await startProxy(t.url);
    orion = createOrion({ baseUrl: proxy.url, apiKey: KEY });
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  /** A detached turn whose service goes away after the first chunk; `during` runs while it is away. */
  async function throughOutage(turn: AsyncIterable<RunEvent>, held: { open(): void }, during: () => Promise<void>) {
    const events: RunEvent[] = [];
    let away: Promise<void> | undefined;
    let downAt = 0;
    try {
      for await (const event of turn) {
        events.push(event);
        if (event.type === 'chunk' && !away) {
          await proxy.down();
          downAt = Date.now();
          away = during();
        }
      }
    } finally {
      held.open();
      await away;
      if (!proxy.listening()) await proxy.up();
    }
    return { events, downAt };
  }

  /** The turn's events until it throws: the error and when. */
  const caught = (turn: AsyncIterable<RunEvent>, out: { error?: unknown; at?: number }): AsyncIterable<RunEvent> => ({
    async *[Symbol.asyncIterator]() {
      try {
        yield* turn;
      } catch (err) {
        out.error = err;
        out.at = Date.now();
      }
    },
  });

  it(`the service away for ${OUTAGE_MS / 1000} s mid-run: the default reconnect waits it out and resumes from the last seq, every event once`, async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const turn = orion.chat.send({ content: 'Tell me in two parts', options: { detach: true } });
    let upAt = 0;
    const { events, downAt } = await throughOutage(turn, held, async () => {
      // the run goes on while the client cannot reach the service
      held.open();
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      await proxy.up();
      upAt = Date.now();
    });
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error(`the last event is ${done.type}`);
    expect(done).toMatchObject({ stopReason: 'final_answer', fullContent: 'Part one. Part two.' });
    expect(upAt - downAt).toBeGreaterThanOrEqual(OUTAGE_MS);
    // none lost, none twice
    expect(seqs(events)).toEqual(oneToN(events.length));
    expect(text(events)).toBe(done.fullContent);
    expect(turn.reconnects).toBeGreaterThan(1);
    const firstChunk = events.find((e) => e.type === 'chunk')!.seq;
    expect(proxy.requests.filter((r) => r.startsWith(`GET /api/chat/runs/${done.requestId}/events`))).toEqual([expect.stringMatching(new RegExp(`\\r\\nlast-event-id: ${firstChunk}\\r\\n`, 'i'))]);
  }, 60_000);

  it('a reconnect budget shorter than the outage ends the stream with OrionStreamError at the last seq, within the budget', async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const turn = orion.chat.send({ content: 'Tell me in two parts, briefly', options: { detach: true } }, { reconnect: { budgetMs: 1_500 } });
    const out: { error?: unknown; at?: number } = {};
    const { events, downAt } = await throughOutage(caught(turn, out), held, async () => undefined);
    expect(out.error).toBeInstanceOf(OrionStreamError);
    expect(out.error).toMatchObject({ requestId: turn.requestId, lastSeq: events.at(-1)!.seq });
    // tried for the whole budget, and no longer (the last try comes at its end)
    expect(out.at! - downAt).toBeGreaterThanOrEqual(1_450);
    expect(out.at! - downAt).toBeLessThan(1_500 + 500);
    expect(turn.reconnects).toBeGreaterThan(0);
  }, 30_000);

  it('aborting while the stream waits to reconnect ends it at once', async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const abort = new AbortController();
    const turn = orion.chat.send({ content: 'Tell me in two parts, or not', options: { detach: true } }, { signal: abort.signal });
    const out: { error?: unknown; at?: number } = {};
    let abortedAt = 0;
    await throughOutage(caught(turn, out), held, async () => {
      // a few tries in: the waits between them are a second or more by now
      await new Promise((r) => setTimeout(r, 2_000));
      abortedAt = Date.now();
      abort.abort();
    });
    expect(out.error).toMatchObject({ name: 'AbortError' });
    expect(out.at! - abortedAt).toBeLessThan(150);
  }, 30_000);
});
