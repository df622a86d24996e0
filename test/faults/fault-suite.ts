/**
 * npm run test:faults  [-- --runs 10 --trace-runs 100 --continuation-runs 10]   (DATABASE_URL: a PostgreSQL database, required)
 *
 * Two Orion processes on one PostgreSQL and a scripted model. For each case the turn runs on
 * instance A, which is killed (SIGKILL) at the case's point or frozen (SIGSTOP past its lease,
 * then SIGCONT); B survives and its sweeper closes what A left. Then the invariants are checked
 * against the database and what the client received, and violations are counted.
 * A is frozen at three points (`frozen-model`, `frozen-tool`, `frozen`: as the model is asked, while a
 * tool runs, mid-answer); its client reads it to the end and must get exactly one `done`, its
 * `error` and `done` byte-equal to the rows B stored. `kill-while-awaiting`: A killed while a run waits
 * for a person (both routes), the approval given on B, which takes the run over; the tool must run once.
 * After every run, the trace: each stored `phase` event must have the `orchestration_phase_<status>`
 * record of the same phase, phaseIndex and cycleIndex, and each stored `tool_progress` completed/failed
 * of a call that ran the `tool_result` record of the same callId (traceGaps): a run's trace records
 * ride the statement that stores its events, so a kill never leaves an event without them.
 * Continuation (issue 44, continuation.ts): the turn killed at each of eight points on both routes, its
 * client reconnecting to B with Last-Event-ID; B must continue it (or close it with a reason), a tool
 * that is not read-only (an MCP tool, counted at the tool) never runs twice, no trace gap, and the
 * client's answer is the stored one byte for byte. `--continuation-runs N` per point and route (default --runs);
 * `--continuation-alternate` each point on one route only, alternating (CI's reduced form).
 * `--min-continued P` (default 95): the suite fails when under P % of the killed turns were
 * continued to their answer, even with 0 violations (in CI's 8 runs, one closed run fails it).
 * `--cases frozen,mid-stream` runs only those cases (`continue` all continuation cases, `continue:mid-stream` one).
 * Prints: case × protocol × runs × violations. Exits 1 on any violation.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { Client } from 'pg';
import { freePort, readSse, startModel, startOrion, type Instance, type ModelHook, type ModelScript, type Received } from './harness';
import { waitFor } from '../support/wait-for';
import { withTimeout } from '../../src/common/util/abort.util';
import { BenchReport } from '../../bench/report';
import { traceGaps } from './trace-gaps';
import { liveEvents } from '../../src/runs/fork-prefix';
import { ContinuationTally, continuationRun, KILL_POINTS, NOTE_SERVER, NOTE_TOOL, startNoteTool } from './continuation';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const arg = (name: string, d: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : d);
const RUNS = arg('--runs', 10);
const TRACE_RUNS = arg('--trace-runs', 100);
/** issue 44's goal: at least this share of the killed turns continued to their answer (the rest closed with a reason) */
const MIN_CONTINUED_PCT = arg('--min-continued', 95);
/** runs per point and route of the continuation cases (issue 44) */
const CONTINUATION_RUNS = arg('--continuation-runs', RUNS);
/** CI's reduced form: each kill point on one route, the routes alternating (8 runs, both routes covered) */
const CONTINUATION_ALTERNATE = process.argv.includes('--continuation-alternate');
const LEASE_MS = 2000;
const DIST = join(__dirname, '..', '..', 'dist', 'main.js');
const DB = process.env.DATABASE_URL;
if (!DB) throw new Error('test:faults needs DATABASE_URL (PostgreSQL)');

type Point = 'before-model' | 'mid-stream' | 'after-tool-calls' | 'during-tool' | 'after-tool-result' | 'before-done' | 'after-done' | 'during-cancel' | 'after-start' | Frozen | 'none' | 'surrogate' | 'deep-args';
/** A frozen at a point of the turn: as the model is asked (before its first byte), while a slow tool runs, mid-answer (`frozen`). */
type Frozen = 'frozen-model' | 'frozen-tool' | 'frozen';
const FROZEN: readonly string[] = ['frozen-model', 'frozen-tool', 'frozen'];
/** Cases that are not one turn killed at a point: a resume killed, a paused run resumed on the survivor, a multi-MB model line. */
type Special = 'during-resume' | 'paused-then-kill' | 'racing-resumes-after-kill' | 'long-line' | 'kill-while-awaiting';
/** a tool that is still running when the kill comes: fetch_page of a page the scripted server answers slowly */
const SLOW_PAGE_MS = 1500;
/** longer than the default LLM_MAX_LINE_LENGTH (8 MiB) */
const LONG_LINE = 9 * 1024 * 1024;
const LONG_MARKER = 'please answer with one long line';
let modelPort = 0;
const PROTOCOLS = { 'two-stage': '/api/chat/messages_two_stage', unified: '/api/chat/messages' } as const;
/** the built-ins a takeover may run again: they only read */
const READ_ONLY_BUILTINS = ['list_files', 'read_file', 'fetch_page', 'rag_query', 'web_search'];
const CALLS: Array<[string, string]> = [
  ['list_files', '{"path":"."}'],
  ['list_files', '{"path":"./"}'],
];

let script: ModelScript = { words: [], calls: CALLS, delayMs: 30 };
let onModel: (h: ModelHook, n: number) => void = () => undefined;

async function main() {
  const model = await startModel(() => script, (h, n) => onModel(h, n));
  modelPort = model.port;
  // the continuation cases' tool with a side effect, counted at the tool (an MCP server in this process)
  const note = await startNoteTool();
  const mcpConfig = join(mkdtempSync(join(tmpdir(), 'orion-faults-mcp-')), 'mcp.json');
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { [NOTE_SERVER]: { url: note.url } } }));
  const env = {
    FETCH_ALLOW_HOSTS: `127.0.0.1:${model.port}`, DATABASE_URL: DB!, LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'fault', TWO_STAGE_ENABLED: 'true', RUN_LEASE_MS: String(LEASE_MS),
    // the note tool is not read-only: it runs as the model asks (no person in the loop)
    MCP_CONFIG: mcpConfig, TOOLS_APPROVAL_DEFAULT: 'none',
  };
  const pg = new Client({ connectionString: DB });
  await pg.connect();
  let a = await startOrion(DIST, await freePort(), env);
  const b = await startOrion(DIST, await freePort(), env);
  const table: Array<{ case: string; protocol: string; runs: number; violations: number; notes: Set<string> }> = [];
  const continuation = new ContinuationTally();
  try {
    const all: Array<Point | Special> = ['before-model', 'after-start', 'mid-stream', 'after-tool-calls', 'during-tool', 'after-tool-result', 'before-done', 'after-done', 'during-cancel', 'during-resume', 'paused-then-kill', 'racing-resumes-after-kill', 'kill-while-awaiting', 'frozen-model', 'frozen-tool', 'frozen', 'surrogate', 'deep-args', 'long-line'];
    // --cases a,b: only those (while working on one fault)
    const only = process.argv.includes('--cases') ? process.argv[process.argv.indexOf('--cases') + 1].split(',') : null;
    const cases = only ? all.filter((c) => only.includes(c)) : all;
    for (const point of cases) {
      for (const [protocol, route] of Object.entries(PROTOCOLS)) {
        // pause and resume exist on the two-stage route only
        const resumes = point === 'during-resume' || point === 'paused-then-kill' || point === 'racing-resumes-after-kill';
        // only a two-stage run that waits for a person is taken over (a unified one is closed)
        if (resumes && protocol !== 'two-stage') continue;
        const row = { case: point, protocol, runs: 0, violations: 0, notes: new Set<string>() };
        table.push(row);
        const n = FROZEN.includes(point) || point === 'long-line' ? Math.max(1, Math.ceil(RUNS / 3)) : RUNS;
        for (let i = 0; i < n; i++) {
          let problems: string[];
          if (point === 'racing-resumes-after-kill') {
            const r = await racingResumes(a, b, pg, env);
            a = r.a;
            problems = r.problems;
          } else if (point === 'kill-while-awaiting') problems = await killWhileAwaiting(a, b, pg, i % 2 === 1, route);
          else problems = resumes ? await resumeRun(a, b, pg, point as 'during-resume' | 'paused-then-kill') : point === 'long-line' ? await longLineRun(a, b, pg, route) : await oneRun(a, b, pg, route, point as Point);
          row.runs++;
          row.violations += problems.length;
          problems.forEach((p) => row.notes.add(p));
          // a SIGKILL sent at the end of a case may not have reached the exit event yet: an A that no
          // longer answers is waited for (bounded) so the next case does not post to a dead instance
          if (a.child.exitCode === null && a.child.signalCode === null && !(await answers(a))) await withTimeout(once(a.child, 'exit'), 5_000, undefined);
          if (a.child.exitCode !== null || a.child.signalCode !== null) a = await startOrion(DIST, a.port, env);
        }
        console.error(`${point} ${protocol}: ${row.runs} runs, ${row.violations} violations ${[...row.notes].join('; ')}`);
      }
    }
    // continuation (issue 44): killed at each point, the client reconnects to B, B continues the run
    const continuing = KILL_POINTS.filter((p) => !only || only.includes('continue') || only.includes(`continue:${p}`));
    for (const [pi, point] of continuing.entries()) {
      for (const [ri, [protocol, route]] of Object.entries(PROTOCOLS).entries()) {
        if (CONTINUATION_ALTERNATE && (pi + ri) % 2 === 1) continue;
        const row = { case: `continue:${point}`, protocol, runs: 0, violations: 0, notes: new Set<string>() };
        table.push(row);
        for (let i = 0; i < CONTINUATION_RUNS; i++) {
          await waitForTool(a, NOTE_TOOL);
          await waitForTool(b, NOTE_TOOL);
          const r = await continuationRun({ a, b, pg, route, note, leaseMs: LEASE_MS, setScript: (x) => (script = x), setHook: (h) => (onModel = h) }, point);
          continuation.add(r);
          row.runs++;
          row.violations += r.problems.length;
          r.problems.forEach((p) => row.notes.add(p));
          if (r.outcome !== 'continued') row.notes.add(`${r.outcome}${r.reason ? ` (${r.reason})` : ''}`);
          if (a.child.exitCode === null && a.child.signalCode === null && !(await answers(a))) await withTimeout(once(a.child, 'exit'), 5_000, undefined);
          if (a.child.exitCode !== null || a.child.signalCode !== null) a = await startOrion(DIST, a.port, env);
        }
        console.error(`continue:${point} ${protocol}: ${row.runs} runs, ${row.violations} violations ${[...row.notes].join('; ')}`);
      }
    }
    // the trace test: GET /api/trace on the other instance the moment done arrives — a plain turn
    // on each route, and a two-stage turn paused on A and resumed on B (trace read from A)
    for (const variant of ['two-stage', 'unified', 'two-stage paused on A, resumed on B'] as const) {
      const traceRow = { case: 'trace-at-done', protocol: variant, runs: 0, violations: 0, notes: new Set<string>() };
      table.push(traceRow);
      const resumed = variant.startsWith('two-stage paused');
      const runs = resumed ? Math.max(1, Math.ceil(TRACE_RUNS / 5)) : TRACE_RUNS;
      for (let i = 0; i < runs; i++) {
        const r = resumed ? await traceAfterResume(a, b) : await traceAtDone(a, b, variant === 'unified' ? PROTOCOLS.unified : PROTOCOLS['two-stage']);
        traceRow.runs++;
        if (r) {
          traceRow.violations++;
          traceRow.notes.add(r);
        }
      }
    }
  } finally {
    a.child.kill('SIGKILL');
    b.child.kill('SIGKILL');
    model.close();
    await note.close();
    await pg.end();
  }
  console.log('\n| case | protocol | runs | violations |\n|---|---|---|---|');
  for (const r of table) console.log(`| ${r.case} | ${r.protocol} | ${r.runs} | ${r.violations} |${r.notes.size ? ' ' + [...r.notes].join('; ') : ''}`);
  const kills = table.filter((r) => ![...FROZEN, 'surrogate', 'deep-args', 'long-line', 'trace-at-done'].includes(r.case)).reduce((s, r) => s + r.runs, 0);
  const total = table.reduce((s, r) => s + r.violations, 0);
  console.log(`\nkilled runs: ${kills}; violations: ${total}`);
  if (continuation.runs) console.log(continuation.summary());
  for (const [key, c] of frozenClients) console.log(`${key}: the stalled instance's client got exactly one done in ${c.oneDone} of ${c.runs} runs, its error and done byte-equal to run_events in ${c.byteEqual}`);
  if (longLineGaps.length) console.log(`long line: largest pause between the other turn's chunks ${Math.max(...longLineGaps)} ms (its model sends one every 20 ms)`);
  const report = new BenchReport(
    'faults',
    'Two built instances on one PostgreSQL; the turn\'s instance is killed (SIGKILL) at each point of a turn or frozen past its lease, ' +
      'hostile model output is fed, and the invariants are checked after every run. A correctness suite: violations must be 0; no floor.',
    { runs: RUNS, continuationRuns: CONTINUATION_RUNS, traceRuns: TRACE_RUNS, leaseMs: LEASE_MS, longLineMiB: LONG_LINE / 1024 / 1024, slowPageMs: SLOW_PAGE_MS, cases: process.argv.includes('--cases') ? process.argv[process.argv.indexOf('--cases') + 1] : 'all' },
  )
    .add('killed-runs', 'killed runs', kills, '')
    .add('violations', 'violations', total, '');
  if (continuation.runs) {
    report
      .add('continuation.runs', 'continuation: killed turns (8 points × both routes)', continuation.runs, '')
      .add('continuation.completed.pct', 'continuation: killed turns completed with the scripted answer and exactly one done', continuation.continuedPct, '%')
      .add('continuation.closed', 'continuation: killed turns closed with a reason', continuation.closed, '')
      .add('continuation.inconsistent', 'continuation: killed turns neither (violations)', continuation.inconsistent, '')
      .add('continuation.tool-twice', 'continuation: runs whose non-read-only tool ran twice (counted at the tool)', continuation.toolTwice, '')
      .add('continuation.trace-gaps', 'continuation: trace gaps', continuation.traceGaps, '')
      .add('continuation.answer-byte-equal', `continuation: client answer byte-equal to the stored one (of ${continuation.answersCompared})`, continuation.answersEqual, '');
  }
  for (const [name, c] of frozenClients) {
    // "frozen-model, two-stage" → "frozen-model.two-stage": keys hold no spaces
    const key = name.replace(/, /g, '.');
    report.add(`${key}.one-done`, `${name}: the stalled instance's client got exactly one done (of ${c.runs} runs)`, c.oneDone, '');
    report.add(`${key}.byte-equal`, `${name}: its error and done byte-equal to run_events`, c.byteEqual, '');
  }
  if (longLineGaps.length) report.add('long-line.max-gap.ms', "long line: largest pause between the other turn's chunks (one sent every 20 ms)", Math.max(...longLineGaps), 'ms');
  report.table('cases', 'Per case and protocol', ['case', 'protocol', 'runs', 'violations', 'notes'], table.map((r) => [r.case, r.protocol, r.runs, r.violations, [...r.notes].join('; ')]), 2).write();
  // closed runs are consistent (no violation), but a suite where too few were continued fails all the same
  const shortOfGoal = continuation.runs > 0 && continuation.continuedPct < MIN_CONTINUED_PCT;
  if (shortOfGoal) console.log(`continuation: ${continuation.continuedPct} % of the killed turns continued, under the goal of ${MIN_CONTINUED_PCT} % (--min-continued)`);
  process.exit(total === 0 && !shortOfGoal ? 0 : 1);
}

/** One turn on A with the fault at `point`; returns the invariant violations. */
async function oneRun(a: Instance, b: Instance, pg: Client, route: string, point: Point): Promise<string[]> {
  script = { words: Array.from({ length: 12 }, (_, i) => `w${i}`), calls: CALLS, delayMs: 30 };
  if (point === 'surrogate') script.hostileText = 'half an emoji \uD83D then text \uDC00';
  if (point === 'deep-args') script.calls = [['list_files', '{"path":' + '['.repeat(50_000) + ']'.repeat(50_000) + '}'], ...CALLS];
  if (point === 'during-tool' || point === 'frozen-tool') {
    script.calls = [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${modelPort}/page` })], ...CALLS];
    script.pageDelayMs = SLOW_PAGE_MS;
  }
  const kill = () => a.child.kill('SIGKILL');
  let requestId = '';
  let frozenAt = 0;
  let modelRequests = 0;
  let woken: Promise<void> = Promise.resolve();
  let pages = 0;
  onModel = (h, n) => {
    if (h === 'request') modelRequests++;
    if (h === 'page') pages++;
    // the page is being fetched: the tool is running
    if (point === 'during-tool' && h === 'page') setTimeout(kill, 100);
    if (point === 'before-model' && h === 'request' && modelRequests === 1) kill();
    if (point === 'mid-stream' && h === 'answer-chunk' && n === 5) kill();
    if (point === 'before-done' && h === 'answer-end') kill();
    // the model is asked again once the tool results are stored
    if (point === 'after-tool-result' && h === 'request' && modelRequests === 2) kill();
    const freezeHere =
      (point === 'frozen' && h === 'answer-chunk' && n === 3) || (point === 'frozen-model' && h === 'request' && modelRequests === 1) || (point === 'frozen-tool' && h === 'page');
    if (freezeHere && !frozenAt) {
      frozenAt = Date.now();
      a.child.kill('SIGSTOP');
      // past the lease B's sweeper closes the run; then A wakes up (the client still reads A)
      woken = until(async () => (await runOf(pg, requestId))?.status !== 'running', LEASE_MS * 6).then(() => {
        a.child.kill('SIGCONT');
      });
    }
  };
  // a content of its own, so the run can be found by its user message when `start` never arrived
  const content = `list the files twice (${point} ${Math.random().toString(36).slice(2, 10)})`;
  const received = await readSse(`${a.url}${route}`, { content }, (e) => {
    if (e.event === 'start') requestId = String(e.data.requestId);
    if (point === 'after-start' && e.event === 'start') kill();
    if (point === 'after-tool-calls' && e.event === 'tool_calls') kill();
    if (point === 'after-done' && e.event === 'done') kill();
    if (point === 'during-cancel' && e.event === 'chunk') {
      void fetch(`${b.url}/api/chat/runs/${requestId}/cancel`, { method: 'POST' });
      setTimeout(kill, 5);
    }
  });
  // the page is still counted: a takeover may run the read-only fetch_page again (issue 44)
  onModel = (h) => void (h === 'page' && pages++);
  // the stalled instance's stream ends after it has sent the run's end (or given up on it)
  if (FROZEN.includes(point)) await woken;
  if (!requestId) {
    // killed before `start` reached the client: find the run by its user message; a user
    // message stored without its run would be a half-opened turn
    const found = (await pg.query<{ request_id: string | null; n: string }>(`SELECT max(r.request_id::text) AS request_id, count(m.id) AS n FROM chat_messages m LEFT JOIN runs r ON r.user_message_id = m.id WHERE m.role = 'user' AND m.content = $1`, [content])).rows[0];
    if (!found.request_id) return Number(found.n) > 0 ? ['a user message stored without its run'] : [];
    requestId = found.request_id;
  }
  // read once the run is closed: a takeover may fetch the page again meanwhile
  const v = await check(pg, b, requestId, received.events, point, () => pages);
  if (FROZEN.includes(point)) v.push(...(await stalledClient(pg, requestId, `${point}, ${Object.entries(PROTOCOLS).find(([, r]) => r === route)?.[0] ?? route}`, received.events)));
  if (point === 'during-tool' && pages === 0) v.push('the slow tool never ran (no kill during a tool)');
  return v;
}

/**
 * during-resume: a two-stage turn paused after its tool results, resumed on A, and A killed while
 * the resumed turn streams. paused-then-kill: A killed right after `paused`; the survivor B must
 * still resume the run to completion. The client's events are both streams together.
 */
async function resumeRun(a: Instance, b: Instance, pg: Client, point: 'during-resume' | 'paused-then-kill'): Promise<string[]> {
  // the first tool is slow, so the pause (asked at `tool_calls`) is stored and heard before the
  // checkpoint after it; a pause that comes after the turn's last tool result is not honoured
  // (the run completes), which would make the case test the race, not the resume
  script = { words: Array.from({ length: 12 }, (_, i) => `w${i}`), calls: [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${modelPort}/page` })], ...CALLS], delayMs: 30, pageDelayMs: 800 };
  let requestId = '';
  let pauseAsked: Promise<string> | null = null;
  let pages = 0;
  onModel = (h) => {
    if (h === 'page') pages++;
  };
  const first = await readSse(`${a.url}${PROTOCOLS['two-stage']}`, { content: 'list the files twice' }, (e) => {
    if (e.event === 'start') requestId = String(e.data.requestId);
    if (e.event === 'tool_calls' && !pauseAsked) pauseAsked = fetch(`${b.url}/api/chat/runs/${requestId}/pause`, { method: 'POST' }).then(async (r) => `${r.status} ${await r.text()}`);
  });
  const paused = first.events.find((e) => e.event === 'paused');
  if (!paused) {
    onModel = () => undefined;
    return [`no paused event (pause answered ${await pauseAsked}; got ${first.events.map((e) => e.event).join(',')})`];
  }
  const resumeBody = { requestId, resumeFromPhaseIndex: paused.data.resumeFromPhaseIndex };
  let second: { status: number; events: Received[] };
  if (point === 'paused-then-kill') {
    a.child.kill('SIGKILL');
    second = await readSse(`${b.url}/api/chat/messages_two_stage/resume`, resumeBody, () => undefined);
  } else {
    onModel = (h, n) => {
      if (h === 'page') pages++;
      if (h === 'answer-chunk' && n === 4) a.child.kill('SIGKILL');
    };
    second = await readSse(`${a.url}/api/chat/messages_two_stage/resume`, resumeBody, () => undefined);
  }
  onModel = () => undefined;
  const v = await check(pg, b, requestId, [...first.events, ...second.events], 'none', pages);
  if (point === 'paused-then-kill') {
    if (second.status !== 200) v.push(`resume on the survivor answered ${second.status}`);
    if ((await runOf(pg, requestId))?.status !== 'completed') v.push(`paused run resumed on the survivor ended ${(await runOf(pg, requestId))?.status}`);
  }
  return v;
}

/**
 * A model stream with one line past LLM_MAX_LINE_LENGTH, while another turn streams on the same
 * instance: the long-line turn ends with `error` + `done`, the other completes with every word.
 * The largest pause between the other turn's chunks is noted (a figure, not asserted).
 */
async function longLineRun(a: Instance, b: Instance, pg: Client, route: string): Promise<string[]> {
  script = { words: Array.from({ length: 40 }, (_, i) => `w${i}`), calls: [], delayMs: 20, longLine: { marker: LONG_MARKER, length: LONG_LINE } };
  let longId = '';
  let otherId = '';
  let last = 0;
  let gap = 0;
  const [long, other] = await Promise.all([
    readSse(`${a.url}${route}`, { content: LONG_MARKER }, (e) => {
      if (e.event === 'start') longId = String(e.data.requestId);
    }),
    readSse(`${a.url}${route}`, { content: 'say forty words' }, (e) => {
      if (e.event === 'start') otherId = String(e.data.requestId);
      if (e.event === 'chunk') {
        const now = Date.now();
        if (last) gap = Math.max(gap, now - last);
        last = now;
      }
    }),
  ]);
  const v = [...(await check(pg, b, longId, long.events, 'none')), ...(await check(pg, b, otherId, other.events, 'none'))];
  if (!long.events.some((e) => e.event === 'error')) v.push('long line: no error event');
  if (long.events.at(-1)?.event !== 'done' || long.events.at(-1)?.data.stopReason !== 'error') v.push('long line: the turn did not end with done(error)');
  const words = other.events.filter((e) => e.event === 'chunk').map((e) => String(e.data.text ?? e.data.content ?? '')).join('');
  if ((await runOf(pg, otherId))?.status !== 'completed' || !words.includes('w39')) v.push('long line: the other turn did not complete');
  longLineGaps.push(gap);
  return v;
}
const longLineGaps: number[] = [];

const TRACED_CALLS = ['tool_call', 'duplicate_tool_call', 'tool_call_invalid', 'tool_call_refused'];
const callsMade = (events: Received[]) => events.filter((e) => e.event === 'tool_calls').reduce((n, e) => n + (e.data.calls as unknown[]).length, 0);
const tracedCalls = async (at: Instance, requestId: string) => ((await (await fetch(`${at.url}/api/trace?requestId=${requestId}`)).json()) as Array<{ type: string }>).filter((t) => TRACED_CALLS.includes(t.type)).length;

/** A turn on A; the moment `done` arrives, B's trace route must show every tool call it made (a repeat is traced as refused). */
async function traceAtDone(a: Instance, b: Instance, route: string): Promise<string | null> {
  script = { words: ['ok'], calls: CALLS, delayMs: 0 };
  let check: Promise<number> = Promise.resolve(-1);
  const got = await readSse(`${a.url}${route}`, { content: 'list twice' }, (e) => {
    if (e.event === 'done') check = tracedCalls(b, String(e.data.requestId));
  });
  const made = callsMade(got.events);
  const seen = await check;
  return seen !== made || made === 0 ? `trace showed ${seen} of ${made} tool calls` : null;
}

/** A two-stage turn on A whose pause is asked through B at its first `tool_calls` (its first tool, fetch_page, is slow). */
async function pausedOnA(a: Instance, b: Instance): Promise<{ requestId: string; first: { events: Received[] }; paused?: Received }> {
  let requestId = '';
  let asked = false;
  const first = await readSse(`${a.url}${PROTOCOLS['two-stage']}`, { content: 'list the files twice' }, (e) => {
    if (e.event === 'start') requestId = String(e.data.requestId);
    if (e.event === 'tool_calls' && !asked) {
      asked = true;
      void fetch(`${b.url}/api/chat/runs/${requestId}/pause`, { method: 'POST' });
    }
  });
  return { requestId, first, paused: first.events.find((e) => e.event === 'paused') };
}

/** A two-stage turn paused on A (asked through B), resumed on B; the moment B sends `done`, A's trace must show every call of both legs. */
async function traceAfterResume(a: Instance, b: Instance): Promise<string | null> {
  script = { words: ['ok'], calls: [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${modelPort}/page` })], ...CALLS], delayMs: 0, pageDelayMs: 300 };
  const { requestId, first, paused } = await pausedOnA(a, b);
  if (!paused) return `not paused (${first.events.map((e) => e.event).join(',')})`;
  let check: Promise<number> = Promise.resolve(-1);
  const second = await readSse(`${b.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: paused.data.resumeFromPhaseIndex }, (e) => {
    if (e.event === 'done') check = tracedCalls(a, requestId);
  });
  const made = callsMade([...first.events, ...second.events]);
  const seen = await check;
  // a rerun tool's repeat is traced both as a call and as a repeat: at least every call made
  return seen < made || made === 0 ? `after a resume on B, A's trace showed ${seen} of ${made} tool calls at done` : null;
}

/**
 * A two-stage turn paused after its slow first tool, A killed, A started again, then two resumes
 * at once, one on each instance: exactly one wins (the other is a 409), the run completes once,
 * and every fetch of the tool's page is an execution the run recorded (none ran twice).
 */
async function racingResumes(a: Instance, b: Instance, pg: Client, env: Record<string, string>): Promise<{ a: Instance; problems: string[] }> {
  script = { words: Array.from({ length: 6 }, (_, i) => `w${i}`), calls: [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${modelPort}/page` })], ...CALLS], delayMs: 20, pageDelayMs: 800 };
  let pages = 0;
  onModel = (h) => {
    if (h === 'page') pages++;
  };
  const { requestId, first, paused } = await pausedOnA(a, b);
  if (!paused) {
    onModel = () => undefined;
    return { a, problems: [`not paused (${first.events.map((e) => e.event).join(',')})`] };
  }
  a.child.kill('SIGKILL');
  await new Promise((r) => a.child.once('exit', r));
  const a2 = await startOrion(DIST, a.port, env);
  const body = { requestId, resumeFromPhaseIndex: paused.data.resumeFromPhaseIndex };
  const both = await Promise.all([readSse(`${a2.url}/api/chat/messages_two_stage/resume`, body, () => undefined), readSse(`${b.url}/api/chat/messages_two_stage/resume`, body, () => undefined)]);
  onModel = () => undefined;
  const problems: string[] = [];
  const statuses = both.map((x) => x.status).sort();
  if (statuses.join(',') !== '200,409') problems.push(`racing resumes answered ${statuses.join(' and ')}`);
  const winner = both.find((x) => x.status === 200);
  problems.push(...(await check(pg, b, requestId, [...first.events, ...(winner?.events ?? [])], 'none', pages)));
  if ((await runOf(pg, requestId))?.status !== 'completed') problems.push(`the resumed run ended ${(await runOf(pg, requestId))?.status}`);
  return { a: a2, problems };
}

/** the project whose override makes fetch_page wait for a person (the other cases' projects do not) */
const APPROVAL_PROJECT = 'fault-approvals';

/**
 * A turn on A (`route`: either protocol, issue 44) asks for approval of fetch_page (counted at the page the scripted server
 * serves); A is killed (SIGKILL) while it waits; a client follows the run from B; the approval is
 * given on B, before B's sweeper took the run over or (`afterTakeover`) once it did. The tool
 * must run exactly once, the run end with one done and one stored answer, and B's follower get
 * one done; the usual invariants hold too.
 */
async function killWhileAwaiting(a: Instance, b: Instance, pg: Client, afterTakeover: boolean, route: string): Promise<string[]> {
  const put = await fetch(`${b.url}/api/admin/projects/${APPROVAL_PROJECT}/tool-approvals`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ require: ['fetch_page'], exempt: [] }),
  });
  if (!put.ok) return [`the approval override was refused (${put.status})`];
  script = { words: ['the', 'page', 'says', 'hello'], calls: [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${modelPort}/page` })]], delayMs: 5 };
  let pages = 0;
  onModel = (h) => {
    if (h === 'page') pages++;
  };
  let requestId = '';
  let approvalId = '';
  let killed: Promise<unknown> = Promise.resolve();
  const first = await readSse(`${a.url}${route}`, { content: 'fetch the page', projectId: APPROVAL_PROJECT }, (e) => {
    if (e.event === 'start') requestId = String(e.data.requestId);
    if (e.event === 'approval_required' && !approvalId) {
      approvalId = String(e.data.approvalId);
      // asked once: the model answers after the decision
      script = { ...script, calls: [] };
      killed = once(a.child, 'exit');
      a.child.kill('SIGKILL');
    }
  });
  const v: string[] = [];
  try {
    if (!approvalId) return [`no approval_required (${first.events.map((e) => e.event).join(',')})`];
    await killed;
    const following = readSse(`${b.url}/api/chat/runs/${requestId}/events`, undefined, () => undefined, 'GET');
    const takenOver = async () => (await pg.query(`SELECT 1 FROM run_event_list WHERE request_id = $1 AND type = 'start' AND (data->>'takeover')::boolean`, [requestId])).rows.length > 0;
    if (afterTakeover && !(await until(takenOver, LEASE_MS * 6))) v.push('B did not take the run over within 6 leases');
    const decided = await fetch(`${b.url}/api/chat/runs/${requestId}/approvals/${approvalId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }) });
    if (decided.status !== 200) v.push(`the decision on B answered ${decided.status}`);
    const followed = await following;
    v.push(...(await check(pg, b, requestId, first.events, 'none', pages)));
    if (pages !== 1) v.push(`the tool ran ${pages} times`);
    const dones = followed.events.filter((e) => e.event === 'done');
    if (dones.length !== 1) v.push(`B's follower got ${dones.length} done events`);
    if (!(await takenOver())) v.push('no start event says takeover');
    const answers = Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows[0].n);
    if (answers !== 1) v.push(`${answers} stored answers`);
    if ((await runOf(pg, requestId))?.status !== 'completed') v.push(`the taken-over run ended ${(await runOf(pg, requestId))?.status}`);
  } finally {
    onModel = () => undefined;
  }
  return v;
}

/** frozen runs per point and protocol, and those whose client of the stalled instance got the run's stored end exactly */
const frozenClients = new Map<string, { runs: number; oneDone: number; byteEqual: number }>();

/**
 * frozen: the client still reads the stalled instance, which finds on waking that B took its run.
 * It must get exactly one `done`, no seq twice or skipped, and its `error` and `done` must be B's
 * stored rows byte for byte: the SSE data line as sent against the run_events row's JSON as
 * PostgreSQL returns it (jsonb's order of members), which is also what the reconnect route sends.
 */
async function stalledClient(pg: Client, requestId: string, key: string, got: Received[]): Promise<string[]> {
  const v: string[] = [];
  const counts = frozenClients.get(key) ?? { runs: 0, oneDone: 0, byteEqual: 0 };
  frozenClients.set(key, counts);
  counts.runs++;
  const dones = got.filter((e) => e.event === 'done').length;
  if (dones === 1) counts.oneDone++;
  else v.push(`the stalled instance's client got ${dones} done events`);
  if (got.some((e, i) => e.id !== i + 1)) v.push(`the stalled instance's client got seqs ${got.map((e) => e.id).join(',')}`);
  const stored = new Map((await pg.query<{ seq: number; type: string; data: Record<string, unknown> }>('SELECT seq, type, data FROM run_event_list WHERE request_id = $1', [requestId])).rows.map((r) => [r.seq, r]));
  const ends = got.filter((e) => e.event === 'error' || e.event === 'done');
  // a run B closed ends with its error; one B continued (a two-stage run, from its start or a checkpoint) with its done
  const status = (await pg.query<{ status: string }>('SELECT status FROM runs WHERE request_id = $1', [requestId])).rows[0]?.status;
  if (status !== 'completed' && !ends.some((e) => e.event === 'error' && e.data.code === 'instance_lost')) v.push(`the stalled instance's client got no error instance_lost (got ${got.map((e) => e.event).join(',')})`);
  const unequal = ends.filter((e) => {
    const s = stored.get(e.id);
    return !s || s.type !== e.event || e.raw !== JSON.stringify(s.data);
  });
  unequal.forEach((e) => v.push(`the stalled instance's client got ${e.event}#${e.id} unlike its stored row`));
  if (ends.length > 0 && unequal.length === 0) counts.byteEqual++;
  return v;
}

async function runOf(pg: Client, requestId: string) {
  return (await pg.query<{ status: string; conversation_id: string; user_message_id: string; stop_reason: string }>('SELECT status, conversation_id, user_message_id, stop_reason FROM runs WHERE request_id = $1', [requestId])).rows[0];
}

/** True once `fn` holds, false if it did not within `ms` (the caller reports that as a violation). */
function until(fn: () => Promise<boolean>, ms: number): Promise<boolean> {
  return waitFor(fn, { timeoutMs: ms, intervalMs: 100 }).then(
    () => true,
    () => false,
  );
}

/**
 * The invariants of one run. `pages`: how many times the scripted server served fetch_page's
 * page during the run — each must be an execution the stored events show (`tool_progress
 * calling`), so a tool that ran again after a kill or a resume, unrecorded, is caught at the tool.
 */
async function check(pg: Client, b: Instance, requestId: string, got: Received[], point: Point, pagesServed?: number | (() => number)): Promise<string[]> {
  const v: string[] = [];
  if (!requestId) return ['no start event'];
  // the run ends exactly once: by A, or by B's sweeper within a few leases
  // (the sweeper marks the run failed, then appends error + done: wait for both)
  const closed = async () =>
    (await runOf(pg, requestId))?.status !== 'running' &&
    (await pg.query<{ type: string }>('SELECT type FROM run_event_list WHERE request_id = $1 ORDER BY seq DESC LIMIT 1', [requestId])).rows[0]?.type === 'done';
  if (!(await until(closed, LEASE_MS * 6))) v.push('run not closed within 6 leases');
  const run = await runOf(pg, requestId);
  const stored = (await pg.query<{ seq: number; type: string; data: Record<string, unknown> }>('SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq', [requestId])).rows;
  if (stored.some((e, i) => e.seq !== i + 1)) v.push('gap in stored seq');
  const ends = stored.filter((e) => e.type === 'done');
  if (ends.length !== 1) v.push(`${ends.length} stored done events`);
  if (stored.at(-1)?.type !== 'done') v.push('last stored event is not done');
  const expected = { stop: 'completed', error: 'failed', cancelled: 'cancelled' }[String(ends[0]?.data.stopReason)] ?? 'completed';
  if (run && run.status !== expected && !(expected === 'completed' && ['length', 'max_iterations'].includes(String(ends[0]?.data.stopReason)))) v.push(`status ${run.status} but done says ${String(ends[0]?.data.stopReason)}`);
  // nothing reached the client that is not stored, exactly as stored
  for (const e of got) {
    const s = stored[e.id - 1];
    if (!s || s.type !== e.event || canonicalize(s.data) !== canonicalize(e.data)) v.push(`client got unstored ${e.event}#${e.id}`);
  }
  const clientDone = got.find((e) => e.event === 'done');
  if (clientDone && clientDone.data.stopReason !== ends[0]?.data.stopReason) v.push('client done differs from stored done');
  // user message once, assistant message at most once
  const msgs = (await pg.query<{ role: string; n: string }>('SELECT role, count(*) AS n FROM chat_messages WHERE conversation_id = $1 GROUP BY role', [run?.conversation_id])).rows;
  const count = (role: string) => Number(msgs.find((m) => m.role === role)?.n ?? 0);
  if (count('user') !== 1) v.push(`${count('user')} user messages`);
  if (count('assistant') > 1) v.push(`${count('assistant')} assistant messages`);
  // replayable through the reconnect route on the survivor
  const replay = await readSse(`${b.url}/api/chat/runs/${requestId}/events`, undefined, () => undefined, 'GET');
  if (replay.events.length !== stored.length || replay.events.some((e, i) => e.id !== stored[i].seq)) v.push('replay differs from stored events');
  // no tool call ran twice, and a completed run's trace holds every tool call it made
  // a call that waited for a person is traced with outcome approval_required first, without running
  const traced = (
    await pg.query<{ call: string; name: string; n: string }>(
      `SELECT details->>'callId' AS call, max(details->>'name') AS name, count(*) AS n FROM trace_events WHERE request_id = $1 AND type = 'tool_result' AND details->>'outcome' IS DISTINCT FROM 'approval_required' GROUP BY 1`,
      [requestId],
    )
  ).rows;
  // except a read-only built-in that a takeover ran again (a unified step cut off while its calls ran, issue 44)
  const takenOver = stored.some((e) => e.type === 'start' && e.data.takeover === true);
  const takeovers = Number((await pg.query<{ takeovers: number }>('SELECT takeovers FROM runs WHERE request_id = $1', [requestId])).rows[0]?.takeovers ?? 0);
  if (traced.some((t) => t.call && Number(t.n) > 1 && !(takenOver && READ_ONLY_BUILTINS.includes(t.name)))) v.push('a tool ran twice');
  if (run?.status === 'completed') {
    // the calls of a leg a takeover superseded (issue 44: the step its dead instance was cut off in) are not the run's
    const madeCalls = liveEvents(stored).filter((e) => e.type === 'tool_calls').reduce((n, e) => n + (e.data.calls as unknown[]).length, 0);
    // a repeated call is refused, not run: it is traced as duplicate_tool_call (or invalid/refused)
    const tc = Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM trace_events WHERE request_id = $1 AND type IN ('tool_call', 'duplicate_tool_call', 'tool_call_invalid', 'tool_call_refused')`, [requestId])).rows[0].n);
    if (tc < madeCalls) v.push(`trace has ${tc} of ${madeCalls} tool calls`);
  }
  v.push(...(await traceGaps(pg, requestId, stored)));
  if ((point === 'surrogate' || point === 'deep-args') && run?.status !== 'completed') v.push(`hostile output ended the run ${run?.status}`);
  if (point === 'surrogate') {
    // the text around the lone surrogates arrives and is stored (the halves are replaced, not fatal)
    const text = stored.filter((e) => e.type === 'chunk').map((e) => String(e.data.content ?? '')).join('');
    if (!text.includes('half an emoji') || !text.includes('then text')) v.push('the text around lone surrogates was lost');
  }
  if (point === 'deep-args') {
    // the 50,000-deep arguments never reach a tool (unified refuses them with a reason; two-stage
    // takes the first usable call of the step, as it always does)
    if (stored.some((e) => e.type === 'tool_progress' && e.data.action === 'calling' && JSON.stringify(e.data.params ?? '').includes('[[[['))) v.push('a tool ran with the deep arguments');
  }
  const pages = typeof pagesServed === 'function' ? pagesServed() : pagesServed;
  if (pages !== undefined) {
    // a call refused before it runs (by the argument policy: validation_error) never reaches the page
    const fetches = stored.filter((e) => e.type === 'tool_progress' && e.data.tool === 'fetch_page');
    const refused = new Set(fetches.filter((e) => e.data.action !== 'calling' && e.data.outcome === 'validation_error').map((e) => String(e.data.callId)));
    // every execution shows its `calling`, also one of a leg a takeover superseded
    const shown = fetches.filter((e) => e.data.action === 'calling' && !refused.has(String(e.data.callId))).length;
    // (fetch_page is read-only: a fetch cut off by a takeover runs again there, once per takeover)
    if (pages < shown || pages > shown + takeovers) v.push(`fetch_page's page was served ${pages} times for ${shown} recorded executions`);
  }
  return v;
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/** Waits until the instance lists `tool` as available (an MCP tool appears once its server answered). */
async function waitForTool(i: Instance, tool: string): Promise<void> {
  await waitFor(async () => ((await (await fetch(`${i.url}/api/tools`)).json()) as Array<{ name: string; available: boolean }>).some((t) => t.name === tool && t.available), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: `${tool} on ${i.url}`,
  });
}

/** Whether the instance answers its liveness probe. */
async function answers(i: Instance): Promise<boolean> {
  return fetch(`${i.url}/api/health/live`).then((r) => r.ok, () => false);
}
