import type { DataSource } from 'typeorm';
import type { RunEventWriter } from '../../src/runs/run-event-writer.service';
import type { TraceWriterService } from '../../src/trace/trace-writer.service';
import type { DatabaseContext } from '../support/db-context';
import { startRunTraceContext, type RunTraceContext } from '../support/run-trace-context';

/**
 * Issue 44, item 5: a trace record whose details hold what PostgreSQL refuses in jsonb (NUL, a lone
 * UTF-16 surrogate: a tool's output, a model's split emoji) still rides the statement that stores its
 * run's events. Before, it failed that statement, which was retried without any of its records: the
 * events were committed while the records waited for the trace writer's own flush, so an instance
 * killed in between left stored events without their trace (the fault suite's trace gaps).
 */
describe('trace records that PostgreSQL would refuse as they are (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let writer: RunEventWriter;
  let trace: TraceWriterService;
  let open: RunTraceContext['open'];

  beforeAll(async () => {
    ({ db, ds, writer, trace, open } = await startRunTraceContext());
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(() => trace.flush());

  const commits = async (table: 'trace_events' | 'run_events', requestId: string) =>
    ((await ds.query(`SELECT DISTINCT xmin::text AS x FROM ${table} WHERE request_id = $1`, [requestId])) as Array<{ x: string }>).map((r) => r.x);

  it.each([
    ['a NUL in a tool output', 'bin\u0000ary'],
    ['a lone surrogate in a model text', 'half an emoji \uD83D then text'],
  ])('%s: the record is stored, made storable, by the statement of the events it precedes', async (_what, text) => {
    const id = await open();
    const dropped = trace.droppedEvents;
    trace.record({ requestId: id, projectId: 'p', type: 'tool_result', details: { callId: 'c1', output: { text } } });
    trace.record({ requestId: id, projectId: 'p', type: 'orchestration_phase_end', details: { phase: 'tool_phase', phaseIndex: 2, cycleIndex: 0 } });
    await writer.append(id, 'me', [{ seq: 1, type: 'tool_progress', data: { seq: 1, callId: 'c1', action: 'completed' } }, { seq: 2, type: 'phase', data: { seq: 2, phase: 'tool_phase', status: 'end', phaseIndex: 2, cycleIndex: 0 } }]);
    // committed with the events: a kill right after this statement leaves no event without its trace
    expect(await commits('trace_events', id)).toEqual(await commits('run_events', id));
    const stored: Array<{ type: string; text: string | null }> = await ds.query(`SELECT type, details->'output'->>'text' AS text FROM trace_events WHERE request_id = $1 ORDER BY id`, [id]);
    expect(stored.map((r) => r.type)).toEqual(['tool_result', 'orchestration_phase_end']);
    expect(stored[0].text).toBe(text.replace(/\u0000|\uD83D/g, '\uFFFD'));
    expect(trace.droppedEvents).toBe(dropped);
  });
});
