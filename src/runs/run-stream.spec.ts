import type { RunEventRepository, StoredRunEvent } from './repositories/run-event.repository';
import type { SentEvent } from './run-event-bus.service';
import fc from 'fast-check';
import { RunStream } from './run-stream';
import { scriptedDelay } from '../../test/support/scripted-delay';

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
    const stream = new RunStream(id, repo, [sink], { lastSeq: 0 });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    for (let i = 0; i < 50; i++) void stream.emit({ type: 'chunk', content: `c${i} ` });
    await stream.emit({ type: 'done', fullContent: '', stopReason: 'final_answer', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 } });
    await stream.flush();
    expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: 52 }, (_, i) => i + 1));
    expect(stored.map((e) => e.seq)).toEqual(sent.map((e) => e.seq));
    expect(sent.map((e) => e.data)).toEqual(stored.map((e) => e.data));
    // chunks were batched: fewer inserts than events
    expect(sent.filter((e) => e.type === 'chunk')).toHaveLength(50);
  });

  it('stops sending once storing fails, and reports the failure', async () => {
    const repo = { insertMany: async () => Promise.reject(new Error('db down')) } as unknown as RunEventRepository;
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 0 });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    expect(sent).toEqual([]);
    expect(stream.error?.message).toBe('db down');
  });

  it('knows the last seq stored and sent when storing fails behind queued chunks', async () => {
    let calls = 0;
    const repo = { insertMany: async () => (++calls === 1 ? undefined : Promise.reject(new Error('db down'))) } as unknown as RunEventRepository;
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 4 });
    await stream.emit({ type: 'start', protocol: 'two-stage', userMessageId: null });
    for (const c of ['a', 'b', 'c']) stream.chunk(c);
    await stream.flush();
    expect(stream.error?.message).toBe('db down');
    expect(sent.map((e) => e.seq)).toEqual([5]);
    expect(stream.lastSeq).toBe(8); // numbered, never stored or sent
    expect(stream.lastSentSeq).toBe(5); // what the client's next event follows
  });

  it('after a storage failure, the error and done its client is told directly are enveloped as any other event, numbered on from the last one sent', async () => {
    let calls = 0;
    const repo = { insertMany: async () => (++calls === 1 ? undefined : Promise.reject(new Error('db down'))) } as unknown as RunEventRepository;
    const stream = new RunStream(id, repo, [() => undefined], { lastSeq: 4, state: { phase: 'tool_phase', phaseIndex: 3, cycleIndex: 1 } });
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
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 41, state: { phase: 'tool_phase', phaseIndex: 4, cycleIndex: 2 } });
    await stream.emit({ type: 'notice', code: 'cycle_budget_reached', message: 'x' });
    expect(sent[0]).toMatchObject({ seq: 42, type: 'notice', data: { seq: 42, phase: 'tool_phase', phaseIndex: 4, cycleIndex: 2, requestId: 'r', projectId: 'p', conversationId: 'c' } });
  });

  it("writes a chunk's JSON exactly as JSON.stringify of its envelope would, whatever the text and ids", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.array(fc.string({ unit: 'binary' }), { minLength: 1, maxLength: 4 }), async (requestId, projectId, contents) => {
        const sent: SentEvent[] = [];
        const stream = new RunStream({ requestId, projectId, conversationId: 'c"\\' }, slowRepo(0).repo, [(e) => void sent.push(...e)], { lastSeq: 7 });
        await stream.emit({ type: 'phase', phase: 'tool_phase', status: 'start', phaseIndex: 3, cycleIndex: 2 } as never);
        for (const content of contents) void stream.emit({ type: 'chunk', content });
        await stream.flush();
        for (const e of sent) expect(e.json).toBe(JSON.stringify(e.data));
        expect(sent.filter((e) => e.type === 'chunk').map((e) => JSON.parse(e.json!).content)).toEqual(contents);
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
        const stream = new RunStream(id, slowRepo(0).repo, [(e) => void sent.push(...e)], { lastSeq: 0 });
        for (const s of steps) void stream.emit(s as never);
        await stream.flush();
        expect(sent.map((e) => e.seq)).toEqual(steps.map((_, i) => i + 1));
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
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 0 });
    for (const c of ['a', 'b', 'c']) expect(stream.chunk(c)).toBeNull();
    expect(inserted).toEqual([]); // not before the turn ends: the rest of the burst joins
    await turn();
    expect(inserted).toEqual([['a', 'b', 'c']]);
    releases[0]();
    await stream.flush();
    expect(sent.map((e) => e.data.content)).toEqual(['a', 'b', 'c']);
    // idle again: a lone chunk goes at the end of its own turn
    stream.chunk('d');
    await turn();
    expect(inserted).toEqual([['a', 'b', 'c'], ['d']]);
    releases[1]();
    await stream.flush();
    expect(sent.map((e) => e.data.content)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('stores one batch at a time: the chunks that arrive while a write is in flight go together in the next, as soon as it is done', async () => {
    const { repo, inserted, releases } = heldRepo();
    const sent: SentEvent[] = [];
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 0 });
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
    // [b, c] went as one write as soon as [a] was done
    expect(inserted).toEqual([['a'], ['b', 'c']]);
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
    expect(sent.map((e) => e.data.content)).toEqual(['a', 'b', 'c', ...Array.from({ length: RunStream.CHUNK_BATCH_SIZE }, (_, i) => `d${i}`)]);
    expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: sent.length }, (_, i) => i + 1));
  });

  it('flushes the chunks of the turn with a run\'s other events at once, in seq order, and schedules nothing after', async () => {
    const { repo, inserted, releases } = heldRepo();
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 0 });
    stream.chunk('a');
    stream.chunk('b');
    const phase = stream.emit({ type: 'phase', phase: 'tool_phase', status: 'start', phaseIndex: 1, cycleIndex: 0 } as never);
    await turn();
    // one write for all three (the phase event carries no content), and the turn's end found nothing left to store
    expect(inserted).toEqual([['a', 'b', undefined as never]]);
    releases[0]();
    await phase;
    await turn();
    expect(inserted).toHaveLength(1);
    expect(sent.map((e) => e.seq)).toEqual([1, 2, 3]);
  });
  it('stores an event held between phases with the run\'s next write, never alone and never sent before it is stored', async () => {
    const stored: StoredRunEvent[][] = [];
    const repo = { insertMany: async (_id: string, rows: StoredRunEvent[]) => void stored.push(rows) } as unknown as RunEventRepository;
    const sent: SentEvent[] = [];
    const stream = new RunStream(id, repo, [(e) => void sent.push(...e)], { lastSeq: 0 });
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
