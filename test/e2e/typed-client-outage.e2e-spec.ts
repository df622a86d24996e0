import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createOrion, OrionStreamError, type Orion, type RunEvent, type RunEventOf } from '../../clients/typescript/src';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { openAiSseFrames, type ScriptStep } from '../support/llm-wire';
import { ReplayServer, respond, type ScriptedResponse } from '../support/replay-server';
import { scriptedDelay } from '../support/scripted-delay';
import { waitFor } from '../support/wait-for';

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
  const down = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of open) s.destroy();
    await closed;
  };
  const up = () => new Promise<void>((resolve) => server.listen(at, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${at}`,
    requests,
    /** the service away for `ms`: connections cut now, refused until it comes back */
    outage: async (ms: number) => {
      await down();
      await scriptedDelay(ms);
      await up();
    },
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

  /**
   * A detached turn whose service goes away for `outageMs` after the first chunk (the model's
   * held answer goes on meanwhile); `during` runs while it is away. The events the stream gave out.
   */
  async function throughOutage(turn: AsyncIterable<RunEvent>, held: { open(): void }, outageMs: number, during: () => Promise<void> = async () => undefined) {
    const events: RunEvent[] = [];
    let away: Promise<void> | undefined;
    try {
      for await (const event of turn) {
        events.push(event);
        if (event.type === 'chunk' && !away) {
          away = proxy.outage(outageMs);
          held.open();
          void during();
        }
      }
    } finally {
      held.open();
      await away;
    }
    return events;
  }

  /** The turn's events until it throws: the error, and `then` run as it is caught. */
  const caught = (turn: AsyncIterable<RunEvent>, out: { error?: unknown }, then: () => void): AsyncIterable<RunEvent> => ({
    async *[Symbol.asyncIterator]() {
      try {
        yield* turn;
      } catch (err) {
        out.error = err;
        then();
      }
    },
  });

  it(`the service away for ${OUTAGE_MS / 1000} s mid-run: the default reconnect waits it out and resumes from the last seq, every event once`, async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const turn = orion.chat.send({ content: 'Tell me in two parts', options: { detach: true } });
    const events = await throughOutage(turn, held, OUTAGE_MS);
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error(`the last event is ${done.type}`);
    expect(done).toMatchObject({ stopReason: 'final_answer', fullContent: 'Part one. Part two.' });
    expect(proxy.listening()).toBe(true);
    // none lost, none twice
    expect(seqs(events)).toEqual(oneToN(events.length));
    expect(text(events)).toBe(done.fullContent);
    expect(turn.reconnects).toBeGreaterThan(1);
    // the tries refused while it was away never reached it; the one that did asked for what came after the last seq
    const firstChunk = events.find((e) => e.type === 'chunk')!.seq;
    expect(proxy.requests.filter((r) => r.startsWith(`GET /api/chat/runs/${done.requestId}/events`))).toEqual([expect.stringMatching(new RegExp(`\\r\\nlast-event-id: ${firstChunk}\\r\\n`, 'i'))]);
  }, 60_000);

  it('a reconnect budget shorter than the outage ends the stream with OrionStreamError at the last seq while the service is still away', async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const turn = orion.chat.send({ content: 'Tell me in two parts, briefly', options: { detach: true } }, { reconnect: { budgetMs: 1_500 } });
    const out: { error?: unknown; away?: boolean } = {};
    const events = await throughOutage(caught(turn, out, () => (out.away = !proxy.listening())), held, 3_000);
    expect(out.error).toBeInstanceOf(OrionStreamError);
    expect(out.error).toMatchObject({ requestId: turn.requestId, lastSeq: events.at(-1)!.seq });
    expect(out.away).toBe(true);
    expect(turn.reconnects).toBeGreaterThan(0);
  }, 30_000);

  it('aborting while the stream waits to reconnect ends it at once: no further try', async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const abort = new AbortController();
    const turn = orion.chat.send({ content: 'Tell me in two parts, or not', options: { detach: true } }, { signal: abort.signal });
    const out: { error?: unknown; away?: boolean } = {};
    let triesAtAbort = -1;
    await throughOutage(caught(turn, out, () => (out.away = !proxy.listening())), held, OUTAGE_MS, async () => {
      // a few tries in: the waits between them are a second or more by now
      await waitFor(() => turn.reconnects >= 3, { what: 'three reconnection tries' });
      triesAtAbort = turn.reconnects;
      abort.abort();
    });
    expect(out.error).toMatchObject({ name: 'AbortError' });
    expect(out.away).toBe(true);
    expect(turn.reconnects).toBe(triesAtAbort);
  }, 30_000);
});
