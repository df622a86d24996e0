import type { FencedAppend, RunClosing, RunEventRepository, StoredRunEvent } from './repositories/run-event.repository';
import type { SentEvent } from './run-event-bus.service';
import fc from 'fast-check';
import { RunEventWriter } from './run-event-writer.service';
import { RunStream, type RunEventStore } from './run-stream';
import { scriptedDelay } from '../../test/support/scripted-delay';

type InsertMany = (id: string, rows: StoredRunEvent[], closing?: RunClosing) => Promise<void>;

/**
 * A run's store as the executor builds it (the writer's queue, shared by the runs), over a
 * repository whose `insertMany` stores one statement's rows of one run (these streams are one run each).
 */
function writerOver(repo: RunEventRepository | { insertMany: InsertMany }): RunEventStore {
  const { insertMany } = repo as unknown as { insertMany: InsertMany };
  const writer = new RunEventWriter({
    appendFencedMany: async (appends: FencedAppend[]) => {
      const rows = appends.flatMap((a) => a.rows);
      await insertMany(appends[0].requestId, rows);
      return new Map([[appends[0].requestId, rows.length]]);
    },
    appendFenced: (requestId: string, _owner: string, rows: StoredRunEvent[], closing: RunClosing) => insertMany(requestId, rows, closing),
  } as unknown as RunEventRepository);
  return { enqueue: (batch) => writer.enqueue(batch, 'me'), insertMany: (requestId, rows, closing) => writer.append(requestId, 'me', rows, closing) };
}

/** A repository that stores slowly, to see whether anything is sent before it is stored. */
function slowRepo(delayMs: number) {
  const stored: StoredRunEvent[] = [];
  const repo = {
    insertMany: async (_id: string, rows: StoredRunEvent[]) => {
      await scriptedDelay(delayMs);
      stored.push(...rows);
    },
  } as unknown as RunEventRepository;
  return { repo, stored };
}

const id = { requestId: 'r', projectId: 'p', conversationId: 'c' };

describe('RunStream', () => {
  afterEach(() => jest.useRealTimers());

  it('sends an event only after it is stored, in seq order with no gaps', async () => {
    const { repo, stored } = slowRepo(5);
    const sent: SentEvent[] = [];
    const sink = (events: SentEvent[]) => {
      for (const e of events) {
        // the contract: written to run_events before it is sent
        expect(stored.some((s) => s.seq === e.seq)).toBe(true);
        sent.push(e);
      }
    };
    const stream = new RunStream(id, writerOver(repo), [sink], { lastSeq: 0 });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    for (let i = 0; i < 50; i++) void stream.emit({ type: 'chunk', content: `c${i} ` });
    await stream.emit({ type: 'done', fullContent: '', stopReason: 'final_answer', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 } });
    await stream.flush();
    // the 50 chunks came in one turn, so they waited together: joined, CHUNK_BATCH_SIZE deltas at most per event
    const chunks = sent.filter((e) => e.type === 'chunk');
    expect(chunks).toHaveLength(Math.ceil(50 / RunStream.CHUNK_BATCH_SIZE));
    expect(chunks.map((e) => e.data.content).join('')).toBe(Array.from({ length: 50 }, (_, i) => `c${i} `).join(''));
    expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: chunks.length + 2 }, (_, i) => i + 1));
    expect(stored.map((e) => e.seq)).toEqual(sent.map((e) => e.seq));
    expect(sent.map((e) => e.data)).toEqual(stored.map((e) => e.data));
    for (const e of sent) expect(e.json).toBe(JSON.stringify(e.data));
  });

  it('stops sending once storing fails, and reports the failure', async () => {
    const repo = { insertMany: async () => Promise.reject(new Error('db down')) } as unknown as RunEventRepository;
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    expect(sent).toEqual([]);
    expect(stream.error?.message).toBe('db down');
  });

  it('knows the last seq stored and sent when storing fails behind queued chunks', async () => {
    let calls = 0;
    const repo = { insertMany: async () => (++calls === 1 ? undefined : Promise.reject(new Error('db down'))) } as unknown as RunEventRepository;
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 4 });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    for (const c of ['a', 'b', 'c']) stream.chunk(c);
    await stream.flush();
    expect(stream.error?.message).toBe('db down');
    expect(sent.map((e) => e.seq)).toEqual([5]);
    expect(stream.lastSeq).toBe(6); // the three chunks, joined while they waited: numbered, never stored or sent
    expect(stream.lastSentSeq).toBe(5); // what the client's next event follows
  });

  it('after a storage failure, the error and done its client is told directly are enveloped as any other event, numbered on from the last one sent', async () => {
    let calls = 0;
    const repo = { insertMany: async () => (++calls === 1 ? undefined : Promise.reject(new Error('db down'))) } as unknown as RunEventRepository;
    const stream = new RunStream(id, writerOver(repo), [() => undefined], { lastSeq: 4, state: { phase: 'tool_phase', phaseIndex: 3, cycleIndex: 1 } });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    for (const c of ['a', 'b']) stream.chunk(c);
    await stream.flush();
    const seq = stream.lastSentSeq + 1;
    const error = stream.envelopeAt(seq, { type: 'error', code: 'storage_error', message: 'm', retryable: true });
    const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 };
    const done = stream.envelopeAt(seq + 1, { type: 'done', fullContent: 'ab', messageId: null, stopReason: 'error', usage });
    // the JSON the wire carries (key order included), as the executor wrote it by hand before
    expect(JSON.stringify(error)).toBe(
      '{"seq":6,"type":"error","data":{"requestId":"r","projectId":"p","conversationId":"c","seq":6,"phase":"tool_phase","phaseIndex":3,"cycleIndex":1,"code":"storage_error","message":"m","retryable":true}}',
    );
    expect(JSON.stringify(done.data)).toBe(
      '{"requestId":"r","projectId":"p","conversationId":"c","seq":7,"phase":"complete","phaseIndex":3,"cycleIndex":1,"fullContent":"ab","messageId":null,"stopReason":"error","usage":{"promptTokens":0,"completionTokens":0,"totalTokens":0,"llmCalls":0}}',
    );
  });

  it('continues numbering after the last stored seq (resume) and carries the envelope', async () => {
    const { repo } = slowRepo(0);
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 41, state: { phase: 'tool_phase', phaseIndex: 4, cycleIndex: 2 } });
    await stream.emit({ type: 'notice', code: 'cycle_budget_reached', message: 'x' });
    expect(sent[0]).toMatchObject({ seq: 42, type: 'notice', data: { seq: 42, phase: 'tool_phase', phaseIndex: 4, cycleIndex: 2, requestId: 'r', projectId: 'p', conversationId: 'c' } });
  });

  it("writes a chunk's JSON exactly as JSON.stringify of its envelope would, whatever the text and ids", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.array(fc.string({ unit: 'binary' }), { minLength: 1, maxLength: 4 }), async (requestId, projectId, contents) => {
        const sent: SentEvent[] = [];
        const stream = new RunStream({ requestId, projectId, conversationId: 'c"\\' }, writerOver(slowRepo(0).repo), [(e) => void sent.push(...e)], { lastSeq: 7 });
        await stream.emit({ type: 'phase', phase: 'tool_phase', status: 'start', phaseIndex: 3, cycleIndex: 2 } as never);
        for (const content of contents) void stream.emit({ type: 'chunk', content });
        await stream.flush();
        for (const e of sent) expect(e.json).toBe(JSON.stringify(e.data));
        // chunks of one turn wait together: one event carrying them all, in order
        expect(sent.filter((e) => e.type === 'chunk').map((e) => JSON.parse(e.json!).content)).toEqual([contents.join('')]);
      }),
      { numRuns: 200 },
    );
  });
  it('keeps every chunk\'s JSON exact across phase changes (the envelope serialized once per phase)', async () => {
    const step = fc.oneof(
      fc.record({ phase: fc.constantFrom('action_phase', 'tool_phase'), phaseIndex: fc.nat(1000), cycleIndex: fc.nat(1000) }).map((p) => ({ type: 'phase' as const, status: 'start' as const, ...p })),
      fc.string({ unit: 'binary' }).map((content) => ({ type: 'chunk' as const, content })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 12 }), async (steps) => {
        const sent: SentEvent[] = [];
        const stream = new RunStream(id, writerOver(slowRepo(0).repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
        for (const s of steps) void stream.emit(s as never);
        await stream.flush();
        // adjacent chunks join; a phase start between two chunks keeps them apart
        const expected: string[] = [];
        steps.forEach((s, i) => {
          if (s.type === 'chunk' && steps[i - 1]?.type === 'chunk') expected[expected.length - 1] += s.content;
          else expected.push(s.type === 'chunk' ? s.content : s.phase);
        });
        expect(sent.map((e) => (e.type === 'chunk' ? e.data.content : e.data.phase))).toEqual(expected);
        expect(sent.map((e) => e.seq)).toEqual(expected.map((_, i) => i + 1));
        for (const e of sent) expect(e.json).toBe(JSON.stringify(e.data));
      }),
      { numRuns: 300 },
    );
  });

  /** A repository whose inserts wait until the test releases them, recording each batch's chunks. */
  function heldRepo() {
    const releases: Array<() => void> = [];
    const inserted: string[][] = [];
    const repo = {
      insertMany: (_id: string, rows: StoredRunEvent[]) => {
        inserted.push(rows.map((r) => (r.data as { content: string }).content));
        return new Promise<void>((r) => releases.push(r));
      },
    } as unknown as RunEventRepository;
    return { repo, inserted, releases };
  }
  const turn = () => new Promise((r) => setImmediate(r));

  it('stores and sends the chunks of one turn of the event loop with one write at its end, waiting on no timer', async () => {
    const { repo, inserted, releases } = heldRepo();
    const sent: SentEvent[] = [];
    // timers on a fake clock that never moves: a chunk held by a batch timer would never be stored
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
    for (const c of ['a', 'b', 'c']) expect(stream.chunk(c)).toBeNull();
    expect(inserted).toEqual([]); // not before the turn ends: the rest of the burst joins
    await turn();
    expect(inserted).toEqual([['abc']]); // one row for the burst
    releases[0]();
    await stream.flush();
    expect(sent.map((e) => e.data.content)).toEqual(['abc']);
    // idle again: a lone chunk goes at the end of its own turn, as it came
    stream.chunk('d');
    await turn();
    expect(inserted).toEqual([['abc'], ['d']]);
    releases[1]();
    await stream.flush();
    expect(sent.map((e) => e.data.content)).toEqual(['abc', 'd']);
    expect(sent.map((e) => e.seq)).toEqual([1, 2]);
  });

  it('stores one batch at a time: the chunks that arrive while a write is in flight go together in the next, as soon as it is done', async () => {
    const { repo, inserted, releases } = heldRepo();
    const sent: SentEvent[] = [];
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
    stream.chunk('a');
    await turn(); // [a] is being stored
    // the model's stream goes on while [a] is stored, over several turns: no chunk below a full batch makes it wait
    expect(stream.chunk('b')).toBeNull();
    await turn();
    expect(stream.chunk('c')).toBeNull();
    await turn();
    expect(inserted).toEqual([['a']]); // [a] is still in flight
    releases[0]();
    await turn();
    expect(sent.map((e) => e.data.content)).toEqual(['a']);
    // b and c waited together behind [a]: one chunk, written as soon as [a] was done
    expect(inserted).toEqual([['a'], ['bc']]);
    // behind the batch in flight, the producer is held once a full batch is pending
    const more = Array.from({ length: RunStream.CHUNK_BATCH_SIZE }, (_, i) => stream.chunk(`d${i}`));
    expect(more.slice(0, -1).every((w) => w === null)).toBe(true);
    const wait = more.at(-1)!;
    expect(wait).not.toBeNull();
    let waited = false;
    void wait.then(() => (waited = true));
    await turn();
    expect(waited).toBe(false);
    releases[1]();
    await turn();
    expect(waited).toBe(false); // the full batch is still being stored
    releases[2]();
    await wait;
    expect(sent.map((e) => e.data.content)).toEqual(['a', 'bc', Array.from({ length: RunStream.CHUNK_BATCH_SIZE }, (_, i) => `d${i}`).join('')]);
    expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: sent.length }, (_, i) => i + 1));
  });

  it.each([
    ['large deltas, by characters', () => 'x'.repeat(4096), Math.ceil(RunStream.MAX_UNSENT_CHARS / 4096)],
    ['small deltas, by rows', () => 'y', RunStream.MAX_UNSENT_CHUNKS],
  ])('holds the producer once its client stopped reading, though the store takes every batch (%s)', async (_name, delta, limit) => {
    // the store is instant; the client sink never finishes its first write (a paused socket)
    const stored: StoredRunEvent[] = [];
    const repo = { insertMany: async (_id: string, rows: StoredRunEvent[]) => void stored.push(...rows) } as unknown as RunEventRepository;
    let unblock!: () => void;
    const blocked = new Promise<void>((r) => (unblock = r));
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => (sent.push(...e), blocked)], { lastSeq: 0 });
    let produced = 0;
    let wait: Promise<void> | null = null;
    // one delta per turn of the event loop, so the store takes each one alone before the next comes
    while (wait === null && produced < 10 * limit) {
      wait = stream.chunk(delta());
      produced++;
      await turn();
      await turn();
    }
    expect(wait).not.toBeNull();
    expect(produced).toBe(limit);
    expect(stored.length).toBe(limit); // each was stored: what held it was the client
    let waited = false;
    void wait!.then(() => (waited = true));
    await turn();
    expect(waited).toBe(false);
    unblock();
    await wait;
    expect(sent.map((e) => e.data.content).join('')).toBe(delta().repeat(limit));
  });

  it('flushes the chunks of the turn with a run\'s other events at once, in seq order, and schedules nothing after', async () => {
    const { repo, inserted, releases } = heldRepo();
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
    stream.chunk('a');
    stream.chunk('b');
    const phase = stream.emit({ type: 'phase', phase: 'tool_phase', status: 'start', phaseIndex: 1, cycleIndex: 0 } as never);
    await turn();
    // one write for both chunks, joined, and the phase event (no content); the turn's end found nothing left to store
    expect(inserted).toEqual([['ab', undefined as never]]);
    releases[0]();
    await phase;
    await turn();
    expect(inserted).toHaveLength(1);
    expect(sent.map((e) => e.seq)).toEqual([1, 2]);
  });

  it('joins a waiting chunk only with the chunk right after it: any other event between them keeps them apart', async () => {
    const { repo, inserted, releases } = heldRepo();
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
    stream.chunk('a');
    stream.hold({ type: 'tool_calls', calls: [] });
    stream.chunk('b');
    stream.chunk('c');
    await turn();
    expect(inserted).toEqual([['a', undefined as never, 'bc']]);
    releases[0]();
    await stream.flush();
    expect(sent.map((e) => [e.seq, e.type, e.data.content])).toEqual([
      [1, 'chunk', 'a'],
      [2, 'tool_calls', undefined],
      [3, 'chunk', 'bc'],
    ]);
    for (const e of sent) expect(e.json).toBe(JSON.stringify(e.data));
  });
  it('stores an event held between phases with the run\'s next write, never alone and never sent before it is stored', async () => {
    const stored: StoredRunEvent[][] = [];
    const repo = { insertMany: async (_id: string, rows: StoredRunEvent[]) => void stored.push(rows) } as unknown as RunEventRepository;
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, writerOver(repo), [(e) => void sent.push(...e)], { lastSeq: 0 });
    await stream.emit({ type: 'phase', phase: 'action_phase', status: 'start', phaseIndex: 1, cycleIndex: 0 } as never);
    expect(stream.betweenPhases).toBe(false);
    await stream.emit({ type: 'phase', phase: 'action_phase', status: 'end', phaseIndex: 1, cycleIndex: 0, reason: 'tool_calls' } as never);
    expect(stream.betweenPhases).toBe(true);
    stream.hold({ type: 'tool_calls', calls: [] });
    await turn();
    // nothing written or sent for it yet: the next phase's start carries it
    expect(stored).toHaveLength(2);
    expect(sent.map((e) => e.type)).toEqual(['phase', 'phase']);
    await stream.emit({ type: 'phase', phase: 'tool_phase', status: 'start', phaseIndex: 2, cycleIndex: 1 } as never);
    expect(stream.betweenPhases).toBe(false);
    expect(stored[2].map((e) => e.type)).toEqual(['tool_calls', 'phase']);
    await stream.emit({ type: 'phase', phase: 'tool_phase', status: 'end', phaseIndex: 2, cycleIndex: 1, reason: 'success' } as never);
    // the turn's last events: settle leaves them to the closing write, which stores them with `done`
    stream.hold({ type: 'sources', data: [], sourceTypes: [], ragCount: 0, webCount: 0, confidence: 'high', metrics: null } as never);
    await stream.settle();
    expect(stored).toHaveLength(4);
    await stream.close({ type: 'done', fullContent: '', stopReason: 'final_answer', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 } }, { status: 'completed', stopReason: 'final_answer' });
    expect(stored).toHaveLength(5);
    expect(stored[4].map((e) => e.type)).toEqual(['sources', 'done']);
    expect(sent.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(sent.map((e) => e.type)).toEqual(['phase', 'phase', 'tool_calls', 'phase', 'phase', 'sources', 'done']);
  });
});

describe('RunStream with the writer shared by the runs (fair service)', () => {
  /** Runs' streams over one writer whose statements wait until the test releases them, recording what each carried (run: contents). */
  function sharedWriter() {
    const statements: string[][] = [];
    const closings: string[][] = [];
    const releases: Array<(err?: Error) => void> = [];
    const writer = new RunEventWriter({
      appendFencedMany: (appends: FencedAppend[]) => {
        statements.push(appends.flatMap((a) => a.rows.map((r) => `${a.requestId}:${(r.data as { content: string }).content}`)));
        return new Promise<Map<string, number>>((resolve, reject) =>
          releases.push((err) => {
            if (err) return reject(err);
            const stored = new Map<string, number>();
            for (const a of appends) stored.set(a.requestId, (stored.get(a.requestId) ?? 0) + a.rows.length);
            resolve(stored);
          }),
        );
      },
      appendFenced: async (requestId: string, _owner: string, rows: StoredRunEvent[]) => void closings.push(rows.map((r) => `${requestId}:${(r.data as { content?: string }).content ?? r.type}`)),
    } as unknown as RunEventRepository);
    const store: RunEventStore = { enqueue: (b) => writer.enqueue(b, 'me'), insertMany: (requestId, rows, closing) => writer.append(requestId, 'me', rows, closing) };
    const stream = (requestId: string, sent: string[]) => new RunStream({ ...id, requestId }, store, [(e) => void sent.push(...e.map((x) => `${requestId}:${(x.data.content as string | undefined) ?? x.type}`))], { lastSeq: 0 });
    return { statements, closings, releases, stream };
  }
  const turn = () => new Promise((r) => setImmediate(r));
  /** runs A and B on one shared writer, A's first chunk taken by a statement that is held */
  async function aFirst() {
    const w = sharedWriter();
    const sent: string[] = [];
    const a = w.stream('A', sent);
    const b = w.stream('B', sent);
    a.chunk('a1');
    await turn();
    return { ...w, sent, a, b };
  }

  it('serves the oldest waiting chunk first: a run whose batch is being stored does not fall behind chunks that arrived after its own', async () => {
    const { statements, releases, sent, a, b } = await aFirst();
    expect(statements).toEqual([['A:a1']]); // held
    // while A's first batch is stored: A's chunk, then B's, then A's again
    a.chunk('a2');
    await turn();
    b.chunk('b1');
    await turn();
    a.chunk('a3');
    await turn();
    releases[0]();
    await turn();
    // the next statement takes every waiting chunk, A's (the oldest) first: B does not get a statement while A's older chunk waits
    // (a2 and a3 waited together: one chunk)
    expect(statements).toEqual([['A:a1'], ['A:a2a3', 'B:b1']]);
    releases[1]();
    await Promise.all([a.flush(), b.flush()]);
    expect(sent).toEqual(['A:a1', 'A:a2a3', 'B:b1']);
  });

  it('under load, no run gets a second statement while another run\'s older chunk waits', async () => {
    const w = sharedWriter();
    let statements = w.statements;
    const { releases, stream } = w;
    const sent: string[] = [];
    const runs = ['A', 'B', 'C'].map((r) => stream(r, sent));
    // each run streams a chunk every turn (A, B, C in turn); each statement is held for three turns
    const arrived: string[] = [];
    let released = 0;
    for (let t = 0; t < 12; t++) {
      for (const [i, run] of runs.entries()) {
        arrived.push(`${'ABC'[i]}:${t}`);
        run.chunk(`${t};`);
      }
      await turn();
      if (t % 3 === 2) releases[released++]();
    }
    await turn();
    while (released < releases.length) {
      releases[released++]();
      await turn();
    }
    await Promise.all(runs.map((r) => r.flush()));
    // a run's chunks that waited together are one row: `A:3;4;5;` carries A's chunks 3, 4 and 5
    const rows = statements.flat();
    const split = (row: string) => row.slice(2, -1).split(';').map((t) => `${row[0]}:${t}`);
    expect(rows.length).toBeLessThan(arrived.length);
    statements = statements.map((st) => st.flatMap(split));
    expect(statements.flat().sort()).toEqual(arrived.slice().sort());
    // each statement took every chunk waiting when it started: all of them arrived before any chunk of the next one
    const at = (c: string) => arrived.indexOf(c);
    for (let s = 1; s < statements.length; s++) expect(Math.max(...statements[s - 1].map(at))).toBeLessThan(Math.min(...statements[s].map(at)));
    expect(statements.length).toBeGreaterThan(2);
    for (const r of ['A', 'B', 'C']) expect(sent.filter((x) => x.startsWith(`${r}:`)).flatMap(split)).toEqual(arrived.filter((x) => x.startsWith(`${r}:`)));
  });

  it('stores a chunk on an idle server at the end of the turn it came in (one hop of the event loop)', async () => {
    const { statements, stream } = sharedWriter();
    const a = stream('A', []);
    expect(a.chunk('x')).toBeNull();
    expect(statements).toEqual([]);
    await turn();
    expect(statements).toEqual([['A:x']]);
  });

  it('stores and sends nothing more of a run once one of its batches failed, while its next batch was already queued; the other runs go on', async () => {
    const { statements, releases, sent, a, b } = await aFirst();
    a.chunk('a2'); // queued behind the failing statement
    b.chunk('b1');
    releases[0](new Error('db down'));
    await turn();
    await turn();
    // a2 was not stored: A's stored events end where its client's end
    expect(statements.flat()).not.toContain('A:a2');
    releases.at(-1)!();
    await b.flush();
    await a.flush().catch(() => undefined);
    expect(a.error?.message).toBe('db down');
    expect(a.lastSentSeq).toBe(0);
    expect(sent).toEqual(['B:b1']);
  });

  it('closes a run with the chunks no statement took yet in the statement that stores its end, after its earlier batches', async () => {
    const { statements, closings, releases, stream } = sharedWriter();
    const sent: string[] = [];
    const a = stream('A', sent);
    a.chunk('a1');
    await turn();
    a.chunk('a2');
    const closed = a.close({ type: 'paused', resumeFromPhaseIndex: 0 } as never, { status: 'paused', stopReason: null });
    await turn();
    expect(closings).toEqual([]); // a1 is still being stored
    releases[0]();
    await closed;
    expect(statements).toEqual([['A:a1']]);
    expect(closings).toEqual([['A:a2', 'A:paused']]);
    expect(sent).toEqual(['A:a1', 'A:a2', 'A:paused']);
  });

  it('after a sink failed, stores nothing more of the run and tells its producer at its next wait', async () => {
    const writer = new RunEventWriter({
      appendFencedMany: async (appends: FencedAppend[]) => new Map(appends.map((a) => [a.requestId, a.rows.length])),
    } as unknown as RunEventRepository);
    const stored: number[] = [];
    const store: RunEventStore = {
      enqueue: (b) => writer.enqueue(b, 'me').then(() => void stored.push(...b.rows.map((r) => r.seq))),
      insertMany: async () => undefined,
    };
    const a = new RunStream(id, store, [() => Promise.reject(new Error('client gone'))], { lastSeq: 0 });
    expect(a.chunk('a1')).toBeNull(); // nobody waits on a1's delivery
    for (let i = 0; i < 4; i++) await turn();
    // the sink failed on a1: the producer hears of it at its next chunk, and nothing after a1 is stored
    await expect(a.chunk('a2')).rejects.toThrow('client gone');
    for (let i = 0; i < 4; i++) await turn();
    expect(stored).toEqual([1]);
    expect(a.lastSentSeq).toBe(0);
  });
});
