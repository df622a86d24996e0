import type { Client } from 'pg';

/** tool_progress outcomes that no tool run produced (a person's decision), so no tool_result is traced for them */
const UNRUN = ['denied', 'expired'];

/**
 * After a kill, every stored run event has its trace records: trace records ride the statement
 * that stores the run events they belong to, so a record made before an event was handed to
 * storage is committed no later than the event. Checked per run, by request id:
 * - each stored `phase` event has the `orchestration_phase_<status>` record of the same phase,
 *   phaseIndex and cycleIndex (recorded just before the event is yielded);
 * - each stored `tool_progress` `completed` / `failed` of a call that ran has the `tool_result`
 *   record of the same callId (recorded by the tool runner as it shapes the result the event shows).
 * One violation per kind of gap in a run.
 */
export async function traceGaps(pg: Client, requestId: string, stored: Array<{ type: string; data: Record<string, unknown> }>): Promise<string[]> {
  const trace = (await pg.query<{ type: string; details: Record<string, unknown> }>('SELECT type, details FROM trace_events WHERE request_id = $1', [requestId])).rows;
  const has = (type: string, match: (d: Record<string, unknown>) => boolean) => trace.some((t) => t.type === type && match(t.details));
  const gaps = new Set<string>();
  for (const e of stored) {
    const d = e.data;
    if (e.type === 'phase' && !has(`orchestration_phase_${String(d.status)}`, (t) => t.phase === d.phase && t.phaseIndex === d.phaseIndex && t.cycleIndex === d.cycleIndex)) {
      gaps.add('trace gap: a stored phase event without its orchestration_phase record');
    }
    if (e.type === 'tool_progress' && (d.action === 'completed' || d.action === 'failed') && !UNRUN.includes(String(d.outcome)) && !has('tool_result', (t) => t.callId === d.callId)) {
      gaps.add('trace gap: a stored tool_progress completed/failed without its tool_result record');
    }
  }
  return [...gaps];
}
