/**
 * npm run test:rolling  [-- --turns 50 --grace 5000 --words 400 --call-delay 8000]   (DATABASE_URL: a PostgreSQL database, required)
 *
 * A rolling restart under load (issue 44, item 4): two Orion processes on one PostgreSQL and a
 * scripted model; `--turns` turns (half two-stage, half unified) all start within 3 s and are in
 * flight together. Each turn is a model call that thinks `--call-delay` ms before it asks for a
 * tool, the tool (its checkpoint), then an answer of `--words` words at 50 ms a word: longer than
 * the grace plus the 5 s a drain waits for a checkpoint, so a draining instance cannot finish its
 * turns and must hand them over. Once every turn has started, each instance in turn gets SIGTERM,
 * is waited for, and is started again. The first drain finds turns of both kinds: some still
 * thinking, handed over at the checkpoint the tool stores; some already answering, handed over
 * where they are (their answer cut short, superseded). A client sends its turn to an instance
 * that is up; a `503 shutting_down` is retried on the other after its Retry-After; a stream that
 * ends without `done` is followed on an instance that is up from its last event (Last-Event-ID).
 *
 * Every turn must complete: run `completed`, the scripted answer stored once, exactly one `done`
 * on the client's stream, its seqs without a gap, and its answer (a `supersedesFromSeq` cut
 * applied) the stored one byte for byte. And the restart must have been under load: all turns in
 * flight at once, each drained instance handing at least one run over, each hand-over traced
 * with the instance it came from and not counted as a takeover (`runs.takeovers` stays 0 unless
 * an instance died). Exits 1 otherwise. With a grace longer than a turn every turn finishes
 * where it runs, nothing is handed over, and the run fails that check: say so with `--no-handover`.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import { Client } from 'pg';
import { readSseFrames } from '../support/sse-reader';
import { scriptedDelay } from '../support/scripted-delay';
import { withTimeout } from '../../src/common/util/abort.util';
import { assembledAnswer } from './continuation';
import { freePort, startModel, startOrion, type Instance, type Received } from './harness';

const arg = (name: string, d: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : d);
const TURNS = arg('--turns', 50);
const GRACE_MS = arg('--grace', 5_000);
/** 50 ms a word: 400 words are a 20 s answer, after an 8 s call: 28 s a turn, past grace + 5 s */
const WORDS = Array.from({ length: arg('--words', 400) }, (_, i) => `r${i}`);
const CALL_DELAY_MS = arg('--call-delay', 8_000);
/** every turn starts within 3 s */
const STAGGER_MS = Math.min(150, 3000 / Math.max(1, TURNS));
const EXPECT_HANDOVER = !process.argv.includes('--no-handover');
const EXPECTED = WORDS.map((w) => `${w} `).join('');
const LEASE_MS = 2000;
const DIST = join(__dirname, '..', '..', 'dist', 'main.js');
const DB = process.env.DATABASE_URL;
if (!DB) throw new Error('test:rolling needs DATABASE_URL (PostgreSQL)');
const ROUTES = ['/api/chat/messages_two_stage', '/api/chat/messages'];

interface Node {
  name: string;
  port: number;
  instance: Instance | null;
}

async function main() {
  const model = await startModel(() => ({ words: WORDS, calls: [['list_files', '{"path":"."}']], delayMs: 50, callDelayMs: CALL_DELAY_MS }), () => undefined);
  const env = {
    DATABASE_URL: DB!, LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'fault', TWO_STAGE_ENABLED: 'true',
    RUN_LEASE_MS: String(LEASE_MS), SHUTDOWN_GRACE_MS: String(GRACE_MS), MAX_CONCURRENT_TURNS: String(TURNS * 2),
  };
  const nodes: Node[] = [];
  for (const name of ['A', 'B']) {
    const port = await freePort();
    nodes.push({ name, port, instance: await startOrion(DIST, port, env) });
  }
  const up = () => nodes.filter((n) => n.instance !== null);
  const pick = (i: number) => {
    const live = up();
    return live.length ? live[i % live.length].instance! : null;
  };
  const pg = new Client({ connectionString: DB });
  await pg.connect();
  const started = Date.now();
  let restarts: Drain[] = [];
  const load = { inFlight: 0, max: 0 };
  try {
    // every turn starts within 3 s; the restarts begin once all are in flight
    const turns = Array.from({ length: TURNS }, (_, i) => scriptedDelay(i * STAGGER_MS).then(() => turn(i, pick, ROUTES[i % 2], load)));
    await scriptedDelay(TURNS * STAGGER_MS + 1000);
    restarts = await rollingRestart(nodes, env);
    const results = await Promise.all(turns);
    const problems: string[][] = [];
    for (const r of results) problems.push(await check(pg, r));
    const failed = problems.filter((p) => p.length > 0);
    const handovers = await handOvers(pg, results.map((r) => r.requestId).filter(Boolean));
    const byDrain = restarts.map((d) => handovers.filter((h) => h.fromPid === d.pid).length);
    // a continuation's `start` says whether it superseded a cut answer or went on from the checkpoint it was handed over at
    const continued = (superseding: boolean) => results.filter((r) => r.events.some((e) => e.event === 'start' && e.data.takeover && (e.data.supersedesFromSeq !== undefined) === superseding)).length;
    const cut = continued(true);
    const atCheckpoint = continued(false);
    console.log(`\nrolling restart (${restarts.map((d, k) => `${d.name} drained in ${(d.ms / 1000).toFixed(1)} s, handing over ${byDrain[k]}`).join('; ')}) of 2 instances under ${TURNS} turns (grace ${GRACE_MS} ms, a ${CALL_DELAY_MS} ms call then ${WORDS.length} words a turn) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    console.log(`completed: ${TURNS - failed.length} of ${TURNS}; in flight at once: at most ${load.max}; refused while draining and retried: ${results.reduce((s, r) => s + r.refused, 0)}; reconnects: ${results.reduce((s, r) => s + r.reconnects, 0)}`);
    console.log(`hand-overs: ${handovers.length} (${atCheckpoint} turns continued from the checkpoint they were handed over at, ${cut} cut short and superseded); counted as takeovers: ${handovers.filter((h) => h.takeovers > 0).length}; naming no instance: ${handovers.filter((h) => h.fromPid === null).length}`);
    for (const [i, p] of problems.entries()) if (p.length) console.log(`turn ${i}: ${p.join('; ')}`);
    const shortfalls = [
      load.max < TURNS ? `only ${load.max} of ${TURNS} turns were in flight at once` : '',
      ...(EXPECT_HANDOVER ? restarts.map((d, k) => (byDrain[k] === 0 ? `${d.name}'s drain handed no run over` : '')) : []),
      handovers.some((h) => h.fromPid === null || !h.handedOver) ? 'a hand-over was traced without the instance it came from' : '',
      handovers.some((h) => h.takeovers > 0) ? 'a hand-over was counted against RUN_MAX_TAKEOVERS' : '',
    ].filter(Boolean);
    for (const l of shortfalls) console.log(`restart: ${l}`);
    process.exitCode = failed.length === 0 && shortfalls.length === 0 ? 0 : 1;
  } finally {
    for (const n of nodes) n.instance?.child.kill('SIGKILL');
    model.close();
    await pg.end();
  }
}

interface HandOver {
  requestId: string;
  fromPid: number | null;
  handedOver: boolean;
  takeovers: number;
}

/** The runs taken over during the restart: from which instance (its pid, from the instance id host:pid:suffix), and their takeover count. */
async function handOvers(pg: Client, requestIds: string[]): Promise<HandOver[]> {
  const rows = (
    await pg.query<{ request_id: string; from: string | null; handed: boolean | null; takeovers: number }>(
      `SELECT t.request_id, t.details->>'fromInstance' AS from, (t.details->>'handedOver')::boolean AS handed, r.takeovers
         FROM trace_events t JOIN runs r ON r.request_id::text = t.request_id
        WHERE t.type = 'run_taken_over' AND t.request_id = ANY($1::varchar[])`,
      [requestIds],
    )
  ).rows;
  return rows.map((r) => ({ requestId: r.request_id, fromPid: r.from ? Number(r.from.split(':').at(-2)) : null, handedOver: r.handed === true, takeovers: r.takeovers }));
}

interface Drain {
  name: string;
  pid: number;
  ms: number;
}

/** SIGTERM each instance in turn; once it has exited, start it again on its port. */
async function rollingRestart(nodes: Node[], env: Record<string, string>): Promise<Drain[]> {
  const done: Drain[] = [];
  for (const n of nodes) {
    const i = n.instance!;
    const exited = once(i.child, 'exit');
    const t0 = Date.now();
    i.child.kill('SIGTERM');
    // the documented bound (docs/API.md, Rolling deploys) and some room for a loaded machine
    const ended = await withTimeout(exited, GRACE_MS + 5_000 + LEASE_MS + 10_000, 'timeout' as const);
    if (ended === 'timeout') throw new Error(`${n.name} did not exit within grace + 5 s + lease + 10 s of its SIGTERM`);
    n.instance = null;
    done.push({ name: n.name, pid: i.child.pid!, ms: Date.now() - t0 });
    n.instance = await startOrion(DIST, n.port, env);
    await scriptedDelay(1000);
  }
  return done;
}

interface TurnResult {
  requestId: string;
  events: Received[];
  refused: number;
  reconnects: number;
  error?: string;
}

/** One client, counted in flight until its turn has ended. */
async function turn(i: number, pick: (i: number) => Instance | null, route: string, load: { inFlight: number; max: number }): Promise<TurnResult> {
  load.max = Math.max(load.max, ++load.inFlight);
  try {
    return await follow(i, pick, route);
  } finally {
    load.inFlight--;
  }
}

/** Sends the turn (retrying a 503 elsewhere), then follows the run until `done`. */
async function follow(i: number, pick: (i: number) => Instance | null, route: string): Promise<TurnResult> {
  const r: TurnResult = { requestId: '', events: [], refused: 0, reconnects: 0 };
  const deadline = Date.now() + 120_000;
  for (let attempt = 0; !r.requestId && Date.now() < deadline; attempt++) {
    const at = pick(i + attempt);
    if (!at) {
      await scriptedDelay(200);
      continue;
    }
    const res = await fetch(`${at.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: `rolling turn ${i}` }) }).catch(() => null);
    if (!res || res.status === 503) {
      r.refused++;
      await scriptedDelay(Number(res?.headers.get('retry-after') ?? 1) * 1000);
      continue;
    }
    if (res.status !== 200 || !res.body) return { ...r, error: `HTTP ${res.status}` };
    await read(res.body, r);
  }
  // the stream ended without done: follow the run on an instance that is up, from the last event
  while (r.requestId && !r.events.some((e) => e.event === 'done') && Date.now() < deadline) {
    const at = pick(i + r.reconnects + 1);
    r.reconnects++;
    if (!at) {
      await scriptedDelay(200);
      continue;
    }
    const res = await fetch(`${at.url}/api/chat/runs/${r.requestId}/events`, { headers: { 'last-event-id': String(r.events.at(-1)?.id ?? 0) } }).catch(() => null);
    if (res?.ok && res.body) await read(res.body, r);
    else await scriptedDelay(200);
  }
  return r;
}

async function read(body: ReadableStream<Uint8Array>, r: TurnResult): Promise<void> {
  try {
    await readSseFrames(body as unknown as AsyncIterable<Uint8Array>, (f) => {
      if (f.event === 'message') return;
      const e = { id: Number(f.id), event: f.event, data: JSON.parse(f.data) as Record<string, unknown>, raw: f.data };
      if (e.event === 'start' && !r.requestId) r.requestId = String(e.data.requestId);
      // an event past an `error lease_lost` that is not stored is the instance's word, not the run's
      if (e.event === 'error' && e.data.code === 'lease_lost') return;
      r.events.push(e);
    });
  } catch {
    /* the instance went away: the client reconnects */
  }
}

async function check(pg: Client, r: TurnResult): Promise<string[]> {
  const v: string[] = [];
  if (r.error) return [r.error];
  if (!r.requestId) return ['never started'];
  const run = (await pg.query<{ status: string }>('SELECT status FROM runs WHERE request_id = $1', [r.requestId])).rows[0];
  if (run?.status !== 'completed') v.push(`run ${run?.status}`);
  const answers = (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [r.requestId])).rows;
  if (answers.length !== 1) v.push(`${answers.length} stored answers`);
  else if (answers[0].content !== EXPECTED) v.push('the stored answer is not the scripted one');
  const dones = r.events.filter((e) => e.event === 'done').length;
  if (dones !== 1) v.push(`${dones} done events on the client's stream`);
  if (r.events.some((e, i) => e.id !== i + 1)) v.push('the client got a seq twice or skipped one');
  if (answers.length === 1 && assembledAnswer(r.events) !== answers[0].content) v.push("the client's answer differs from the stored one");
  return v;
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
