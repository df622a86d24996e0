import type { AppConfigService } from '../config/app-config.service';
import type { TraceEventRepository } from './repositories/trace-event.repository';
import type { TraceRecord } from './trace-sink.port';
import { TraceWriterService } from './trace-writer.service';

const config = { get: (k: string) => (k === 'LLM_API_KEY' ? 'sk-live-abcdef0123456789' : undefined), list: () => ['api-key-1234'] } as unknown as AppConfigService;

function repo(fail?: (rows: TraceRecord[]) => boolean) {
  const stored: TraceRecord[] = [];
  return {
    stored,
    repo: {
      insertMany: async (rows: TraceRecord[]) => {
        if (fail?.(rows)) throw new Error('bad row');
        stored.push(...rows);
      },
    } as unknown as TraceEventRepository,
  };
}

describe('TraceWriterService', () => {
  it('flushes everything queued before the database closes', async () => {
    const r = repo();
    const w = new TraceWriterService(r.repo, config);
    for (let i = 0; i < 5; i++) w.record({ type: 'tool_call', details: { i } });
    expect(r.stored).toHaveLength(0); // batched: nothing written yet
    await w.beforeApplicationShutdown();
    expect(r.stored.map((x) => x.details?.i)).toEqual([0, 1, 2, 3, 4]);
  });

  it('redacts secrets and known keys before they are queued', async () => {
    const r = repo();
    const w = new TraceWriterService(r.repo, config);
    w.record({ type: 'llm_error', details: { message: 'auth failed for sk-live-abcdef0123456789', headers: { Authorization: 'Bearer xyz123456' }, apiKey: 'k', note: 'api-key-1234' } });
    await w.flush();
    const text = JSON.stringify(r.stored);
    expect(text).not.toContain('sk-live-abcdef0123456789');
    expect(text).not.toContain('xyz123456');
    expect(text).not.toContain('api-key-1234');
    expect(r.stored[0].details).toMatchObject({ apiKey: '[REDACTED]' });
  });

  it('keeps the good rows of a batch that holds a bad one', async () => {
    const r = repo((rows) => rows.length > 1 || rows.some((x) => x.details?.bad));
    const w = new TraceWriterService(r.repo, config);
    w.record({ type: 'a', details: { n: 1 } });
    w.record({ type: 'b', details: { bad: true } });
    w.record({ type: 'c', details: { n: 3 } });
    await w.flush();
    expect(r.stored.map((x) => x.type)).toEqual(['a', 'c']);
  });

  it('bounds its queue instead of growing without limit', () => {
    const r = repo();
    const w = new TraceWriterService({ insertMany: () => new Promise(() => undefined) } as unknown as TraceEventRepository, config);
    for (let i = 0; i < TraceWriterService.MAX_QUEUE + 500; i++) w.record({ type: 'x' });
    expect((w as unknown as { queue: unknown[] }).queue.length).toBeLessThanOrEqual(TraceWriterService.MAX_QUEUE);
    // what did not fit is counted, not lost silently
    expect(w.droppedEvents).toBe(TraceWriterService.MAX_QUEUE + 500 - (w as unknown as { queue: unknown[] }).queue.length);
    expect(w.health).toMatchObject({ status: 'dropping', dropped: w.droppedEvents });
    void r;
  });

  it('shows observers each record as made, redacted and timed; a failing observer breaks nothing; queue size is readable', async () => {
    const r = repo();
    const w = new TraceWriterService(r.repo, config);
    const seen: Array<[TraceRecord, number]> = [];
    w.observe(() => {
      throw new Error('broken observer');
    });
    const stop = w.observe((rec, at) => seen.push([rec, at]));
    const before = Date.now();
    w.record({ requestId: 'r1', type: 'llm_error', details: { message: 'bad key sk-live-abcdef0123456789' } });
    w.record({ requestId: 'r1', type: 'run_completed', details: { stopReason: 'final_answer' } });
    expect(w.queued).toBe(2);
    expect(seen.map(([rec]) => rec.type)).toEqual(['llm_error', 'run_completed']);
    expect(JSON.stringify(seen)).not.toContain('sk-live-abcdef0123456789');
    expect(seen[0][1]).toBeGreaterThanOrEqual(before - 1);
    expect(seen[1][1]).toBeGreaterThanOrEqual(seen[0][1]);
    stop();
    w.record({ type: 'tool_call' });
    expect(seen).toHaveLength(2);
    await w.flush();
    expect(w.queued).toBe(0);
    expect(r.stored).toHaveLength(3);
  });

  describe('records taken by the writer of run events (takeFor)', () => {
    const tick = () => new Promise((res) => setImmediate(res));
    const rec = (w: TraceWriterService, requestId: string | null, n: number) => w.record({ requestId, type: 'tool_result', details: { n } });

    it("takes only these runs' records, in the order they were made; a failed statement puts them back in front", async () => {
      const r = repo();
      const w = new TraceWriterService(r.repo, config);
      expect(w.takeFor(['a'])).toBeNull();
      rec(w, 'a', 1);
      rec(w, 'b', 2);
      rec(w, null, 3);
      rec(w, 'a', 4);
      const carry = w.takeFor(['a'])!;
      expect(carry.records.map((x) => x.details?.n)).toEqual([1, 4]);
      expect(w.queued).toBe(2);
      rec(w, 'a', 5);
      carry.putBack();
      carry.stored(); // settles once: the second call changes nothing
      await w.flush();
      expect(r.stored.map((x) => x.details?.n)).toEqual([1, 4, 2, 3, 5]);
      expect(w.droppedEvents).toBe(0);
    });

    it('flush() waits for a statement that carries records, and stores what it put back', async () => {
      const r = repo();
      const w = new TraceWriterService(r.repo, config);
      rec(w, 'a', 1);
      const carry = w.takeFor(['a'])!;
      let flushed = false;
      const flushing = w.flush().then(() => (flushed = true));
      await tick();
      expect(flushed).toBe(false);
      carry.putBack();
      await flushing;
      expect(r.stored.map((x) => x.details?.n)).toEqual([1]);
    });

    it("keeps a run's records in the order made across writers: a later write of the same run starts after the earlier one is done", async () => {
      const r = repo();
      const w = new TraceWriterService(r.repo, config);
      rec(w, 'a', 1);
      const first = w.takeFor(['a'])!;
      rec(w, 'a', 2);
      rec(w, 'b', 3);
      // the writer's own flush holds a's record 2: it waits for the statement carrying record 1
      const flushing = w.flush();
      await tick();
      await tick();
      expect(r.stored).toEqual([]);
      first.stored();
      await flushing;
      expect(r.stored.map((x) => x.details?.n)).toEqual([2, 3]);
      // and a statement of a run whose records the own flush holds waits for that flush
      let release!: () => void;
      const slow = new TraceWriterService({ insertMany: () => new Promise<void>((res) => (release = res)) } as unknown as TraceEventRepository, config);
      rec(slow, 'c', 4);
      const own = slow.flush();
      await tick();
      const carry = slow.takeFor(['c'])!;
      expect(carry.records).toEqual([]);
      let ready = false;
      void carry.ready.then(() => (ready = true));
      await tick();
      expect(ready).toBe(false);
      release();
      await own;
      await carry.ready;
      carry.stored();
    });
  });
});
