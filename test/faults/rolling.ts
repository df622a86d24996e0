/**
 * npm run test:rolling  [-- --turns 50 --grace 15000 --words 100]   (DATABASE_URL: a PostgreSQL database, required)
 *
 * A rolling restart under load (issue 44, item 4): two Orion processes on one PostgreSQL and a
 * scripted model; `--turns` turns (half two-stage, half unified, each a tool call then an answer of
 * `--words` words) are started over the restart window, and each instance in turn gets SIGTERM, is
 * waited for, and started again. A client sends its turn to an instance that is up; a `503
 * shutting_down` is retried on the other after its Retry-After; a stream that ends without `done`
 * is followed on an instance that is up from its last event (Last-Event-ID). Every turn must
 * complete: run `completed`, the scripted answer stored once, exactly one `done` on the client's
 * stream, its seqs without a gap, and its answer (a `supersedesFromSeq` cut applied) the stored one
 * byte for byte. With the default grace every turn can finish where it runs; with `--grace` shorter
 * than a turn (`--grace 1000`) turns are handed over at their next checkpoint and continued by the
 * other instance (issue 44's takeover). Exits 1 unless every turn completed so.
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
const GRACE_MS = arg('--grace', 15_000);
/** 50 ms a word: 100 words are a 5 s answer, so turns run across both restarts */
const WORDS = Array.from({ length: arg('--words', 100) }, (_, i) => `r${i}`);
/** between two turns' starts: 50 turns start over 7.5 s */
const STAGGER_MS = 150;
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
  const model = await startModel(() => ({ words: WORDS, calls: [['list_files', '{"path":"."}']], delayMs: 50 }), () => undefined);
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
  let restarts: string[] = [];
  try {
    // the turns start over the first half of the window; the restarts run meanwhile
    const turns = Array.from({ length: TURNS }, (_, i) => scriptedDelay(i * STAGGER_MS).then(() => turn(i, pick, ROUTES[i % 2])));
    restarts = await rollingRestart(nodes, env);
    const results = await Promise.all(turns);
    const problems: string[][] = [];
    for (const r of results) problems.push(await check(pg, r));
    const failed = problems.filter((p) => p.length > 0);
    const handedOver = (await pg.query<{ n: string }>(`SELECT count(DISTINCT request_id) AS n FROM run_event_list WHERE request_id = ANY($1::uuid[]) AND type = 'start' AND (data->>'takeover')::boolean`, [results.map((r) => r.requestId).filter(Boolean)])).rows[0].n;
    console.log(`\nrolling restart (${restarts.join(', ')}) of 2 instances under ${TURNS} turns (grace ${GRACE_MS} ms, ${WORDS.length} words a turn) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    console.log(`completed: ${TURNS - failed.length} of ${TURNS}; refused while draining and retried: ${results.reduce((s, r) => s + r.refused, 0)}; reconnects: ${results.reduce((s, r) => s + r.reconnects, 0)}; taken over: ${handedOver}`);
    for (const [i, p] of problems.entries()) if (p.length) console.log(`turn ${i}: ${p.join('; ')}`);
    process.exitCode = failed.length === 0 ? 0 : 1;
  } finally {
    for (const n of nodes) n.instance?.child.kill('SIGKILL');
    model.close();
    await pg.end();
  }
}

/** SIGTERM each instance in turn; once it has exited, start it again on its port. */
async function rollingRestart(nodes: Node[], env: Record<string, string>): Promise<string[]> {
  const done: string[] = [];
  for (const n of nodes) {
    await scriptedDelay(1000);
    const i = n.instance!;
    const exited = once(i.child, 'exit');
    const t0 = Date.now();
    i.child.kill('SIGTERM');
    const ended = await withTimeout(exited, GRACE_MS + 5_000 + LEASE_MS * 3 + 10_000, 'timeout' as const);
    if (ended === 'timeout') throw new Error(`${n.name} did not exit after SIGTERM`);
    n.instance = null;
    done.push(`${n.name} drained in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    n.instance = await startOrion(DIST, n.port, env);
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

/** One client: sends its turn (retrying a 503 elsewhere), then follows the run until `done`. */
async function turn(i: number, pick: (i: number) => Instance | null, route: string): Promise<TurnResult> {
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
