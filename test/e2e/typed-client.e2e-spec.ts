import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as ts from 'typescript';
import { createOrion, OrionError, type ExecuteStreamEvent, type Orion, type RunEvent, type RunEventOf } from '../../clients/typescript/src';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { readmeExample } from '../support/readme-example';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { openAiSseFrames, type ScriptStep } from '../support/llm-wire';
import { ReplayServer, respond, type ScriptedResponse } from '../support/replay-server';
import { probeTool } from '../support/test-tools';

const KEY = 'typed-client-key';
const README = join(__dirname, '..', '..', 'clients', 'typescript', 'README.md');

/** A promise the test opens: a scripted model holds its answer on it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/**
 * A model answer that streams up to (and including) the frame with `holdAfter`, then waits for
 * `held` before it sends the rest: the test decides what happens while the turn is mid-stream.
 */
function heldTurn(steps: ScriptStep[], holdAfter: string, held: Promise<void>): ScriptedResponse {
  return respond.handler(async (_req, res) => {
    const frames = openAiSseFrames(steps).map((f) => ('data' in f ? `data: ${f.data}\n\n` : `: ${f.comment}\n\n`));
    const at = frames.findIndex((f) => f.includes(holdAfter)) + 1;
    expect(at).toBeGreaterThan(0);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const f of frames.slice(0, at)) res.write(f);
    await held;
    if (res.destroyed) return;
    for (const f of frames.slice(at)) res.write(f);
    res.end();
  });
}

/**
 * A TCP proxy between the client and the service: it keeps the first bytes each connection sent
 * (the request line and headers) and can cut every open connection, as a network drop does.
 */
async function startProxy(target: string): Promise<{ url: string; requests: string[]; drop(): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  const requests: string[] = [];
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: hostname, port: Number(port) });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.once('data', (head: Buffer) => requests.push(head.toString('latin1').split('\r\n\r\n')[0]));
    client.pipe(upstream).pipe(client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    drop: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const seqs = (events: RunEvent[]) => events.map((e) => e.seq);
const oneToN = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const text = (events: RunEvent[]) => events.filter((e): e is RunEventOf<'chunk'> => e.type === 'chunk').map((e) => e.content).join('');

/** Reads a two-stage turn to its end, pausing it at its first chunk and then letting its held model call go on: every event, the last one `paused`. */
async function pausedAtFirstChunk(turn: AsyncIterable<RunEvent> & { pause(): Promise<unknown> }, held: { open(): void }) {
  const first: RunEvent[] = [];
  for await (const event of turn) {
    first.push(event);
    if (event.type === 'chunk' && first.filter((e) => e.type === 'chunk').length === 1) {
      await turn.pause();
      held.open();
    }
  }
  const paused = first.at(-1)!;
  if (paused.type !== 'paused') throw new Error(`the last event is ${paused.type}`);
  return { first, paused };
}

/**
 * Issue 34, item 3: the typed TypeScript client (clients/typescript) against a running Orion
 * with a scripted model, through a proxy the test can cut: a turn with typed events, a dropped
 * connection picked up again with Last-Event-ID (no event lost or repeated), cancel, pause,
 * resume and fork, the JSON routes, and the README's example run as it is written.
 */
describe(`the typed client against a running service (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let t: TestApp;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let orion: Orion;
  const calls: string[] = [];

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', API_KEYS: KEY, ORCHESTRATION_MIN_SCORE: '0', TOOLS_REQUIRE_APPROVAL: 'probe_guarded' });
    t.app.get(ToolRegistryService).register(probeTool('probe_first', calls));
    t.app.get(ToolRegistryService).register(probeTool('probe_guarded', calls));
    proxy = await startProxy(t.url);
    orion = createOrion({ baseUrl: proxy.url, apiKey: KEY });
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    calls.length = 0;
  });

  it('a turn: typed events from start to done, seq 1…n, the answer in the conversation', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello ' }, { text: 'there.' }]));
    const turn = orion.chat.send({ content: 'Say hello' });
    const events: RunEvent[] = [];
    for await (const event of turn) events.push(event);
    expect(events[0]).toMatchObject({ type: 'start', protocol: 'unified', seq: 1 });
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error(`the last event is ${done.type}`);
    expect(done).toMatchObject({ stopReason: 'final_answer', fullContent: 'Hello there.' });
    expect(seqs(events)).toEqual(oneToN(events.length));
    expect(text(events)).toBe(done.fullContent);
    expect(turn.requestId).toBe(done.requestId);

    expect(await orion.runs.get(done.requestId)).toMatchObject({ status: 'completed', lastSeq: events.length });
    expect((await orion.conversations.list()).map((c) => c.id)).toContain(done.conversationId);
    const messages = await orion.conversations.messages(done.conversationId);
    expect(messages.map((m) => [m.role, m.content])).toEqual([['user', 'Say hello'], ['assistant', 'Hello there.']]);
  });

  it('an approval: the typed stream shows approval_required, approvals.decide approves it, the tool runs once, the turn ends', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_guarded', args: { step: 'one' } } }]), respond.turn([{ text: 'Approved and done.' }]));
    const turn = orion.chat.send({ content: 'Do the guarded thing' }, { route: 'two-stage' });
    const events: RunEvent[] = [];
    for await (const event of turn) {
      events.push(event);
      if (event.type === 'approval_required') {
        expect(calls).toEqual([]);
        expect((await orion.approvals.list(event.requestId)).map((a) => [a.approvalId, a.status])).toEqual([[event.approvalId, 'pending']]);
        await orion.approvals.decide(event.requestId, event.approvalId, { decision: 'approve' });
      }
    }
    const decided = events.find((e) => e.type === 'approval_decided');
    expect(decided).toMatchObject({ decision: 'approve', edited: false });
    expect(calls).toEqual(['probe_guarded:one']);
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'final_answer', fullContent: 'Approved and done.' });
    const again = await orion.approvals.decide(turn.requestId!, (decided as { approvalId: string }).approvalId, { decision: 'deny' }).catch((err: unknown) => err);
    expect(again).toMatchObject({ status: 409 });
  });

  it('a dropped connection mid-stream: the client reconnects with Last-Event-ID and gets every event once', async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const turn = orion.chat.send({ content: 'Tell me in two parts', options: { detach: true } });
    const events: RunEvent[] = [];
    let droppedAt = 0;
    for await (const event of turn) {
      events.push(event);
      if (event.type === 'chunk' && !droppedAt) {
        // the model holds the rest: nothing after this event exists yet when the connection goes
        droppedAt = event.seq;
        proxy.drop();
        held.open();
      }
    }
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error(`the last event is ${done.type}`);
    expect(done).toMatchObject({ stopReason: 'final_answer', fullContent: 'Part one. Part two.' });
    // none lost, none twice
    expect(seqs(events)).toEqual(oneToN(events.length));
    expect(text(events)).toBe(done.fullContent);
    expect(turn.reconnects).toBe(1);
    expect(proxy.requests.find((r) => r.startsWith(`GET /api/chat/runs/${done.requestId}/events`))).toMatch(new RegExp(`\\r\\nlast-event-id: ${droppedAt}\\r\\n`, 'i'));
    // exactly the run's stored events, as a fresh reader of the run gets them
    const replayed: RunEvent[] = [];
    for await (const event of orion.runs.events(done.requestId)) replayed.push(event);
    expect(events).toEqual(replayed);
  });

  /** A fetch for the client that answers the n-th reconnection (GET …/events, 1-based) its own way; the others go through. */
  function reconnectFetch(answers: Record<number, (input: string, init?: RequestInit) => Promise<Response>>) {
    let n = 0;
    return (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = String(input instanceof Request ? input.url : input);
      if (init?.method === 'GET' && /\/api\/chat\/runs\/[^/]+\/events$/.test(new URL(url).pathname)) {
        const answer = answers[++n];
        if (answer) return answer(url, init);
      }
      return fetch(input, init);
    };
  }

  /** A detached turn whose connection the proxy cuts after the first chunk; the events the client gave out. */
  async function cutTurn(client: Orion, content: string) {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Part one. ' }, { text: 'Part two.' }], 'Part one.', held.opened));
    const turn = client.chat.send({ content, options: { detach: true } }, { reconnect: { delayMs: 1 } });
    const events: RunEvent[] = [];
    const ended = (async () => {
      try {
        for await (const event of turn) {
          events.push(event);
          if (event.type === 'chunk' && events.filter((e) => e.type === 'chunk').length === 1) {
            proxy.drop();
            held.open();
          }
        }
      } finally {
        held.open();
      }
    })();
    return { turn, events, ended };
  }

  it('reconnecting: a refused connection and a 503 count as tries, the third try picks the run up, every event once', async () => {
    // a port nothing listens on: the reconnection is refused as by a service that is restarting
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const client = createOrion({
      baseUrl: proxy.url,
      apiKey: KEY,
      fetch: reconnectFetch({
        1: (url, init) => fetch(url.replace(proxy.url, `http://127.0.0.1:${closedPort}`), init),
        2: async () => new Response('{"error":"unavailable","message":"restarting"}', { status: 503, headers: { 'content-type': 'application/json' } }),
      }) as typeof fetch,
    });
    const { turn, events, ended } = await cutTurn(client, 'Tell me in two parts, again');
    await ended;
    expect(turn.reconnects).toBe(3);
    const done = events.at(-1)!;
    expect(done).toMatchObject({ type: 'done', stopReason: 'final_answer', fullContent: 'Part one. Part two.' });
    expect(seqs(events)).toEqual(oneToN(events.length));
  });

  it('reconnecting: a 404 ends the stream as an OrionError at once; a 204 (the run ended, nothing after Last-Event-ID) ends it cleanly', async () => {
    const client = createOrion({
      baseUrl: proxy.url,
      apiKey: KEY,
      // the reconnection asks for a run the service does not know
      fetch: reconnectFetch({ 1: (url, init) => fetch(url.replace(/runs\/[^/]+\/events$/, `runs/${randomUUID()}/events`), init) }) as typeof fetch,
    });
    const { turn, events, ended } = await cutTurn(client, 'Tell me in two parts, once more');
    const err = await ended.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(OrionError);
    expect(err).toMatchObject({ status: 404, code: 'run_not_found' });
    expect(turn.reconnects).toBe(1);
    expect(events.map((e) => e.type)).not.toContain('done');

    // the detached run went on without its reader: read it to its end, then once more after its last seq
    const rest: RunEvent[] = [];
    for await (const event of orion.runs.events(turn.requestId!)) rest.push(event);
    expect(rest.at(-1)).toMatchObject({ type: 'done', fullContent: 'Part one. Part two.' });
    const after: RunEvent[] = [];
    for await (const event of orion.runs.events(turn.requestId!, { lastEventId: rest.at(-1)!.seq })) after.push(event);
    expect(after).toEqual([]);
  });

  it('cancel: the stream ends with done {stopReason: cancelled} and the run is cancelled', async () => {
    const held = gate();
    llm.enqueue(heldTurn([{ text: 'Working on it. ' }, { text: 'Never sent.' }], 'Working on it.', held.opened));
    const turn = orion.chat.send({ content: 'A long answer' });
    const types: string[] = [];
    try {
      for await (const event of turn) {
        types.push(event.type);
        if (event.type === 'chunk') expect(await turn.cancel()).toMatchObject({ requestId: event.requestId });
        if (event.type === 'done') expect(event.stopReason).toBe('cancelled');
      }
    } finally {
      held.open();
    }
    expect(types.at(-1)).toBe('done');
    expect(await orion.runs.get(turn.requestId!)).toMatchObject({ status: 'cancelled' });
    const refused = await orion.runs.cancel(turn.requestId!).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OrionError);
    expect(refused).toMatchObject({ status: 409, code: 'run_finished' });
  });

  it('pause, resume and fork a two-stage run: seq goes on after the pause, the fork is a new run from the checkpoint', async () => {
    const held = gate();
    llm.enqueue(
      heldTurn([{ text: 'Looking. ' }, { toolCall: { name: 'probe_first', args: { step: 'one' }, id: 'c1' } }], 'Looking.', held.opened),
      respond.turn([{ text: 'Resumed answer.' }]),
      respond.turn([{ text: 'Fork answer.' }]),
    );
    const turn = orion.chat.send({ content: 'Find it' }, { route: 'two-stage' });
    const { first, paused } = await pausedAtFirstChunk(turn, held);
    expect(paused.resumeFromPhaseIndex).toBe(2);
    expect(calls).toEqual(['probe_first:one']);
    const requestId = turn.requestId!;

    const second: RunEvent[] = [];
    for await (const event of orion.runs.resume({ requestId, resumeFromPhaseIndex: paused.resumeFromPhaseIndex })) second.push(event);
    expect(second[0]).toMatchObject({ type: 'start', resumed: true, requestId });
    expect(seqs([...first, ...second])).toEqual(oneToN(first.length + second.length));
    const done = second.at(-1)!;
    expect(done).toMatchObject({ type: 'done', stopReason: 'final_answer', fullContent: 'Looking. Resumed answer.' });

    const fork: RunEvent[] = [];
    for await (const event of orion.runs.fork(requestId, { fromPhaseIndex: 2 })) fork.push(event);
    const start = fork[0];
    if (start.type !== 'start') throw new Error(`the first event is ${start.type}`);
    expect(start).toMatchObject({ parentRequestId: requestId, resumeFromPhaseIndex: 2, seq: 1 });
    expect(start.requestId).not.toBe(requestId);
    expect(fork.at(-1)).toMatchObject({ type: 'done', fullContent: 'Looking. Fork answer.' });
    expect(calls).toEqual(['probe_first:one']);
    expect(await orion.runs.get(requestId)).toMatchObject({ status: 'completed', forks: [{ requestId: start.requestId, fromPhaseIndex: 2 }] });
  });

  it('runs.events() follows a run through its stored paused and the resume to done: while the resumed leg is live, and after it', async () => {
    const held = gate();
    const resumedHeld = gate();
    llm.enqueue(
      heldTurn([{ text: 'Looking. ' }, { toolCall: { name: 'probe_first', args: { step: 'one' }, id: 'c1' } }], 'Looking.', held.opened),
      heldTurn([{ text: 'Resumed ' }, { text: 'answer.' }], 'Resumed', resumedHeld.opened),
    );
    const turn = orion.chat.send({ content: 'Find it, then follow it' }, { route: 'two-stage' });
    const { first, paused } = await pausedAtFirstChunk(turn, held);
    const requestId = turn.requestId!;

    // paused and not resumed: the events route's stream ends at the paused
    const whilePaused: RunEvent[] = [];
    for await (const event of orion.runs.events(requestId)) whilePaused.push(event);
    expect(whilePaused).toEqual(first);

    // the resumed leg streams up to its first chunk and holds: a follower from seq 0 reads past the paused into the live leg
    // the follower starts once the resumed leg's start has arrived: before that the run may still read as paused,
    // and a stream that ends at a paused run's paused is the case above, not this one
    const second: RunEvent[] = [];
    const resumedStarted = gate();
    const resumed = (async () => {
      for await (const event of orion.runs.resume({ requestId, resumeFromPhaseIndex: paused.resumeFromPhaseIndex })) {
        second.push(event);
        resumedStarted.open();
      }
    })();
    await resumedStarted.opened;
    const follower = orion.runs.events(requestId);
    const followed: RunEvent[] = [];
    try {
      for await (const event of follower) {
        followed.push(event);
        if (event.type === 'chunk' && event.seq > paused.seq) resumedHeld.open();
      }
    } finally {
      resumedHeld.open();
      await resumed;
    }
    expect(followed.map((e) => e.type)).toContain('paused');
    expect(followed.at(-1)).toMatchObject({ type: 'done', stopReason: 'final_answer', fullContent: 'Looking. Resumed answer.' });
    expect(followed).toEqual([...first, ...second]);
    expect(seqs(followed)).toEqual(oneToN(followed.length));
    // the service kept the stream open across the paused: no reconnection was needed
    expect(follower.reconnects).toBe(0);

    // and read again once the run is done: everything through done, as curl gets it
    const after: RunEvent[] = [];
    for await (const event of orion.runs.events(requestId)) after.push(event);
    expect(after).toEqual(followed);
  });

  it('the JSON routes: knowledge, tool-only execution, conversations, and errors as OrionError', async () => {
    mkdirSync(join(t.workspace, 'default', 'notes'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'notes', 'roadmap.md'), '# Roadmap\n\nThe typed client ships in the autumn release.\n');
    const ingested = await orion.knowledge.ingest({ projectId: 'default', path: 'notes' });
    expect(ingested).toMatchObject({ files: 1, added: 1 });
    const found = await orion.knowledge.search({ q: 'typed client release', projectId: 'default' });
    expect(found.sources.map((s) => s.path)).toContain('notes/roadmap.md');

    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_first', args: { step: 'only' }, id: 'x1' } }]));
    const result = await orion.tools.execute({ userInput: 'probe the first thing', mode: 'Classic' });
    expect(result).toMatchObject({ isSuccess: true, error: null });
    expect(result.executions.map((e) => [e.toolName, e.outcome])).toEqual([['probe_first', 'success']]);
    expect(calls).toEqual(['probe_first:only']);
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_first', args: { step: 'streamed' }, id: 'x2' } }]));
    const streamed: ExecuteStreamEvent[] = [];
    for await (const event of orion.tools.executeStream({ userInput: 'probe it again', mode: 'Classic' })) streamed.push(event);
    expect(streamed.map((e) => (e.type === 'progress' ? e.stage : e.type))).toEqual(['PrepareTools', 'LLMDecision', 'ExecuteTool', 'Finished', 'result']);
    const last = streamed.at(-1)!;
    if (last.type !== 'result') throw new Error(`the last event is ${last.type}`);
    expect(last.executions.map((e) => [e.toolName, e.outcome])).toEqual([['probe_first', 'success']]);
    expect(calls).toEqual(['probe_first:only', 'probe_first:streamed']);

    llm.enqueue(respond.turn([{ text: 'Noted.' }]));
    let conversationId = '';
    for await (const event of orion.chat.send({ content: 'Remember this' })) conversationId = event.conversationId;
    await orion.conversations.rename(conversationId, 'Renamed by the client');
    expect((await orion.conversations.list()).find((c) => c.id === conversationId)).toMatchObject({ title: 'Renamed by the client' });
    await orion.conversations.delete(conversationId);
    expect((await orion.conversations.list()).map((c) => c.id)).not.toContain(conversationId);

    const missing = await orion.runs.get(randomUUID()).catch((err: unknown) => err);
    expect(missing).toMatchObject({ status: 404, code: 'run_not_found' });
    // a refused stream is an OrionError before any event, and nothing is stored
    const before = (await orion.conversations.list()).length;
    const refused = await (async () => {
      for await (const _ of orion.chat.send({ content: '' })) throw new Error('no event expected');
    })().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OrionError);
    expect(refused).toMatchObject({ status: 400 });
    expect((await orion.conversations.list()).length).toBe(before);
    const keyless = createOrion({ baseUrl: proxy.url });
    expect(await keyless.conversations.list().catch((err: unknown) => err)).toMatchObject({ status: 401 });
  });

  it.each([
    ['clients/typescript/README.md', () => /```ts\n([\s\S]*?)```/.exec(readFileSync(README, 'utf8'))![1]],
    ['the README', () => readmeExample('typed-client')],
  ])('the example of %s, run as written, prints the answer', async (_where, read) => {
    const example = read();
    expect(example.trim().split('\n').filter((l) => l.trim()).length).toBeLessThanOrEqual(5);
    llm.enqueue(respond.turn([{ text: 'The roadmap ' }, { text: 'has one item.' }]));
    const js = ts.transpileModule(example, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
    let printed = '';
    const fakeProcess = { env: { ORION_URL: proxy.url, ORION_API_KEY: KEY }, stdout: { write: (s: string) => (printed += s) } };
    // the package's name resolves to this checkout's client, as an installed @orion/client would
    const load = (name: string): unknown => (name === '@orion/client' ? require('../../clients/typescript/src') : require(name));
    const run = new (Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<void>)('require', 'process', 'exports', js);
    await run(load, fakeProcess, {});
    expect(printed).toBe('The roadmap has one item.');
  });
});
