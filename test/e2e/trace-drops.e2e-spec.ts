import { DataSource } from 'typeorm';
import { TraceWriterService } from '../../src/trace/trace-writer.service';
import { startApp, type TestApp } from '../support/app';
import { parsePrometheusText, seriesKey } from '../support/prometheus-text';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';

/**
 * Trace events that cannot be stored are never lost silently: while the trace table cannot be
 * written, a turn still completes, and every event it could not store is counted in
 * `/api/health` (trace `dropping`, `dropped: n`) and in `orion_trace_dropped_events_total`.
 */
describe('trace events that could not be stored', () => {
  const KEY = 'trace-drops-key-0123456789';
  const auth = { Authorization: `Bearer ${KEY}` };
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', API_KEYS: KEY });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  const dropped = async () => {
    const series = parsePrometheusText(await (await fetch(`${t.url}/metrics`, { headers: auth })).text());
    return series.get(seriesKey('orion_trace_dropped_events_total', {})) ?? 0;
  };

  it('are counted in health and metrics, and the turn still completes', async () => {
    expect(await dropped()).toBe(0);
    const health0 = await (await fetch(`${t.url}/api/health`)).json();
    expect(health0.trace).toMatchObject({ status: 'ok', dropped: 0 });

    const ds = t.app.get(DataSource);
    const writer = t.app.get(TraceWriterService);
    await writer.flush();
    await ds.query('ALTER TABLE trace_events RENAME TO trace_events_away');
    try {
      llm.enqueue(respond.turn([{ text: 'Still answering.' }]));
      const { events } = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hello' }, headers: auth, timeoutMs: 30_000 });
      expect(events.at(-1)!.data.stopReason).toBe('final_answer');
      await writer.flush();
    } finally {
      await ds.query('ALTER TABLE trace_events_away RENAME TO trace_events');
    }
    const lost = writer.droppedEvents;
    expect(lost).toBeGreaterThan(0);
    const health = await (await fetch(`${t.url}/api/health`)).json();
    expect(health.status).toBe('degraded');
    expect(health.trace).toMatchObject({ status: 'dropping', dropped: lost });
    expect(await dropped()).toBe(lost);
  });
});
