/**
 * The fault suite's continuation cases (issue 44): a turn on A, killed (SIGKILL) at one of eight
 * points; its client reconnects to B with `Last-Event-ID` when A's stream ends without `done`,
 * and B (its sweeper) takes the run over and continues it, or closes it with a reason. Per run:
 * - the outcome: `continued` (completed, the stored answer is the scripted answer, one `done`),
 *   `closed` (failed or cancelled, an `error` with a code before its one `done`, nothing half-stored),
 *   or `inconsistent` (a violation);
 * - executions of a tool that is not read-only (an MCP tool without `readOnlyHint`), counted at the
 *   tool: never more than one per run;
 * - trace gaps (trace-gaps.ts): none;
 * - the client's stream, A's part and the reconnected part together: seqs 1…n without a gap, one
 *   `done`, the reconnected events byte for byte the stored rows, and the answer it assembles
 *   (chunks after a `supersedesFromSeq` cut dropped) byte for byte the stored answer.
 */
import type { Client } from 'pg';
import { z } from 'zod';
import { startHttpMcpServer } from '../support/mcp-http-server';
import { scriptedDelay } from '../support/scripted-delay';
import { readSseFrames } from '../support/sse-reader';
import { waitFor } from '../support/wait-for';
import { readSse, type Instance, type ModelHook, type ModelScript, type Received } from './harness';
import { traceGaps } from './trace-gaps';

export const KILL_POINTS = ['before-model', 'after-start', 'mid-stream', 'after-tool-calls', 'during-tool', 'after-tool-result', 'before-done', 'after-done'] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

/** the MCP server's name in MCP_CONFIG and its tool: the model calls `note__record_note` */
export const NOTE_SERVER = 'note';
export const NOTE_TOOL = `${NOTE_SERVER}__record_note`;
/** how long the note tool takes at `during-tool` (the kill lands while it runs) */
const SLOW_NOTE_MS = 1500;

/** A tool with a side effect (no readOnlyHint): each execution is counted by its note. */
export async function startNoteTool() {
  const runs = new Map<string, number>();
  let slow = false;
  let onRun: () => void = () => undefined;
  const server = await startHttpMcpServer((s) => {
    s.registerTool('record_note', { description: 'Records a note (a side effect: it must not run twice)', inputSchema: { note: z.string() } }, async ({ note }) => {
      runs.set(note, (runs.get(note) ?? 0) + 1);
      onRun();
      if (slow) await scriptedDelay(SLOW_NOTE_MS);
      return { content: [{ type: 'text', text: `noted ${note}` }] };
    });
  });
  return {
    url: server.url,
    close: () => server.close(),
    executions: (note: string) => runs.get(note) ?? 0,
    /** the next runs are slow, and `hook` is called as each starts */
    set(opts: { slow: boolean; hook?: () => void }) {
      slow = opts.slow;
      onRun = opts.hook ?? (() => undefined);
    },
  };
}
export type NoteTool = Awaited<ReturnType<typeof startNoteTool>>;

export interface ContinuationDeps {
  a: Instance;
  b: Instance;
  pg: Client;
  route: string;
  note: NoteTool;
  leaseMs: number;
  setScript(s: ModelScript): void;
  setHook(h: (hook: ModelHook, n: number) => void): void;
}

export type Outcome = 'continued' | 'closed' | 'inconsistent';
export interface ContinuationResult {
  outcome: Outcome;
  problems: string[];
  toolExecutions: number;
  traceGaps: number;
  /** the client's assembled answer equals the stored one byte for byte (null: nothing stored to compare) */
  answerEqual: boolean | null;
  reconnected: boolean;
  /** a closed run's reason: its stored error's code, else its done's stopReason */
  reason?: string;
}

const WORDS = Array.from({ length: 12 }, (_, i) => `c${i}`);
/** what the scripted model answers, as the stored answer must read */
export const EXPECTED_ANSWER = WORDS.map((w) => `${w} `).join('');

export async function continuationRun(d: ContinuationDeps, point: KillPoint): Promise<ContinuationResult> {
  const marker = Math.random().toString(36).slice(2, 10);
  d.setScript({ words: WORDS, calls: [[NOTE_TOOL, JSON.stringify({ note: marker })]], delayMs: 30 });
  const kill = () => d.a.child.kill('SIGKILL');
  let requests = 0;
  d.note.set({ slow: point === 'during-tool', hook: point === 'during-tool' ? () => setTimeout(kill, 100) : undefined });
  d.setHook((h, n) => {
    if (h === 'request') requests++;
    if (point === 'before-model' && h === 'request' && requests === 1) kill();
    if (point === 'mid-stream' && h === 'answer-chunk' && n === 5) kill();
    if (point === 'before-done' && h === 'answer-end') kill();
    if (point === 'after-tool-result' && h === 'request' && requests === 2) kill();
  });
  const content = `note it (${point} ${marker})`;
  let requestId = '';
  const first = await readSse(`${d.a.url}${d.route}`, { content }, (e) => {
    if (e.event === 'start') requestId = String(e.data.requestId);
    if (point === 'after-start' && e.event === 'start') kill();
    if (point === 'after-tool-calls' && e.event === 'tool_calls') kill();
    if (point === 'after-done' && e.event === 'done') kill();
  });
  d.setHook(() => undefined);
  d.note.set({ slow: false });
  if (!requestId) {
    const found = (await d.pg.query<{ request_id: string | null }>(`SELECT max(r.request_id::text) AS request_id FROM chat_messages m LEFT JOIN runs r ON r.user_message_id = m.id WHERE m.role = 'user' AND m.content = $1`, [content])).rows[0];
    // killed before the turn was opened: nothing to continue, nothing stored
    if (!found?.request_id) return { outcome: 'closed', problems: [], toolExecutions: d.note.executions(marker), traceGaps: 0, answerEqual: null, reconnected: false, reason: 'never opened' };
    requestId = found.request_id;
  }
  const got: Received[] = [...first.events];
  const reconnected = !got.some((e) => e.event === 'done');
  // the client reconnects to the survivor from the last event it got, and reads to the end
  // the client reconnects (again, as a client does, while a stream ends without done) until the end
  const deadline = Date.now() + d.leaseMs * 15;
  const tries: string[] = [];
  while (reconnected && !got.some((e) => e.event === 'done') && Date.now() < deadline) {
    const r = await follow(`${d.b.url}/api/chat/runs/${requestId}/events`, got.at(-1)?.id ?? 0, deadline - Date.now());
    tries.push(`${r.status}:${r.events.length}`);
    got.push(...r.events);
  }
  return judge(d, requestId, marker, got, reconnected, first.events.length, tries);
}

/** GET the run's events after `lastId` (Last-Event-ID), until the stream ends or `ms` pass. */
async function follow(url: string, lastId: number, ms: number): Promise<{ status: number; events: Received[] }> {
  const events: Received[] = [];
  let status = 0;
  try {
    const res = await fetch(url, { headers: { 'last-event-id': String(lastId) }, signal: AbortSignal.timeout(ms) });
    status = res.status;
    if (!res.ok || !res.body) {
      // not there yet (or refused): the client tries again shortly
      await scriptedDelay(200);
      return { status, events };
    }
    await readSseFrames(res.body as unknown as AsyncIterable<Uint8Array>, (f) => {
      if (f.event === 'message') return;
      events.push({ id: Number(f.id), event: f.event, data: JSON.parse(f.data) as Record<string, unknown>, raw: f.data });
    });
  } catch {
    /* timed out: what arrived is judged */
  }
  return { status, events };
}

/** The answer a client assembles: its chunks in order, those at or after a `supersedesFromSeq` dropped when it arrives. */
export function assembledAnswer(events: readonly Received[]): string {
  let chunks: Array<{ seq: number; text: string }> = [];
  for (const e of events) {
    const cut = e.data.supersedesFromSeq;
    if (typeof cut === 'number') chunks = chunks.filter((c) => c.seq < cut);
    if (e.event === 'chunk') chunks.push({ seq: e.id, text: String(e.data.content ?? '') });
  }
  return chunks.map((c) => c.text).join('');
}

async function judge(d: ContinuationDeps, requestId: string, marker: string, got: Received[], reconnected: boolean, fromA: number, tries: string[]): Promise<ContinuationResult> {
  const v: string[] = [];
  const ended = async () => {
    const run = (await d.pg.query<{ status: string }>('SELECT status FROM runs WHERE request_id = $1', [requestId])).rows[0];
    const last = (await d.pg.query<{ type: string }>('SELECT type FROM run_event_list WHERE request_id = $1 ORDER BY seq DESC LIMIT 1', [requestId])).rows[0];
    return !!run && !['running', 'awaiting_approval'].includes(run.status) && last?.type === 'done';
  };
  if (!(await waitFor(ended, { timeoutMs: d.leaseMs * 15, intervalMs: 100 }).then(() => true, () => false))) v.push('run not ended within 15 leases');
  const run = (await d.pg.query<{ status: string; conversation_id: string }>('SELECT status, conversation_id FROM runs WHERE request_id = $1', [requestId])).rows[0];
  const stored = (await d.pg.query<{ seq: number; type: string; data: Record<string, unknown> }>('SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq', [requestId])).rows;
  if (stored.some((e, i) => e.seq !== i + 1)) v.push('gap in stored seq');
  const storedDone = stored.filter((e) => e.type === 'done');
  if (storedDone.length !== 1) v.push(`${storedDone.length} stored done events`);
  // the client's stream: one sequence without a gap or a repeat, one done, each event as stored
  if (got.some((e, i) => e.id !== i + 1)) v.push(`the client got seqs ${got.map((e) => e.id).join(',')}`);
  const dones = got.filter((e) => e.event === 'done').length;
  // (with what each reconnect answered: status and events, for the diagnosis)
  if (dones !== 1) v.push(`the client got ${dones} done events (${fromA} from A, reconnects ${tries.join(' ') || 'none'})`);
  const byRow = new Map(stored.map((s) => [s.seq, s]));
  got.forEach((e, i) => {
    const s = byRow.get(e.id);
    // A's events are checked as stored by fault-suite.ts's invariants; the reconnected ones byte for byte
    if (!s || s.type !== e.event || (i >= fromA && e.raw !== JSON.stringify(s.data))) v.push(`the client got ${e.event}#${e.id} unlike its stored row`);
  });
  const answers = (await d.pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows;
  if (answers.length > 1) v.push(`${answers.length} stored answers`);
  const answerEqual = answers.length === 1 ? assembledAnswer(got) === answers[0].content : null;
  if (answerEqual === false) v.push("the client's assembled answer differs from the stored one");
  const toolExecutions = d.note.executions(marker);
  if (toolExecutions > 1) v.push(`the non-read-only tool ran ${toolExecutions} times`);
  const gaps = await traceGaps(d.pg, requestId, stored);
  v.push(...gaps);
  let outcome: Outcome = 'inconsistent';
  const stopReason = String(storedDone[0]?.data.stopReason);
  if (run?.status === 'completed' && answers[0]?.content === EXPECTED_ANSWER && storedDone.length === 1) outcome = 'continued';
  else if ((run?.status === 'failed' || run?.status === 'cancelled') && storedDone.length === 1 && (stopReason === 'cancelled' || stored.some((e) => e.type === 'error' && typeof e.data.code === 'string'))) outcome = 'closed';
  else v.push(`ended ${run?.status} (${stopReason}) without the scripted answer or a reason`);
  const code = stored.filter((e) => e.type === 'error').map((e) => String(e.data.code)).pop();
  return { outcome, problems: v, toolExecutions, traceGaps: gaps.length, answerEqual, reconnected, reason: outcome === 'closed' ? (code ?? stopReason) : undefined };
}

/** The continuation cases' figures over every run (the suite's report and its BENCHMARKS.md lines). */
export class ContinuationTally {
  runs = 0;
  continued = 0;
  closed = 0;
  inconsistent = 0;
  reconnected = 0;
  answersCompared = 0;
  answersEqual = 0;
  /** runs in which the non-read-only tool ran more than once */
  toolTwice = 0;
  traceGaps = 0;
  /** closing reasons seen (the stored error's code, or the done's stopReason) */
  readonly reasons = new Map<string, number>();

  add(r: ContinuationResult): void {
    const reason = r.reason;
    this.runs++;
    this[r.outcome]++;
    if (r.reconnected) this.reconnected++;
    if (r.answerEqual !== null) this.answersCompared++;
    if (r.answerEqual) this.answersEqual++;
    if (r.toolExecutions > 1) this.toolTwice++;
    this.traceGaps += r.traceGaps;
    if (reason) this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
  }

  get continuedPct(): number {
    return this.runs ? Math.round((1000 * this.continued) / this.runs) / 10 : 0;
  }

  summary(): string {
    const reasons = [...this.reasons].map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    return (
      `continuation: ${this.runs} killed turns; completed with the scripted answer and one done ${this.continued} (${this.continuedPct} %), ` +
      `closed with a reason ${this.closed} (${reasons}), inconsistent ${this.inconsistent}; reconnected ${this.reconnected}; ` +
      `client answer byte-equal to the stored one ${this.answersEqual} of ${this.answersCompared}; non-read-only tool run twice in ${this.toolTwice}; trace gaps ${this.traceGaps}`
    );
  }
}
