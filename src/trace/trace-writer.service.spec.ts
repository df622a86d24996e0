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
});
