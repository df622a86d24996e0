/**
 * npm run bench:budget  [-- --rounds 6 --turns 30 --seed 3000 --statements 200]
 *
 * What the budget admission (issue 46) adds to a send. The built service in this process on the
 * scripted model (bench/support); rounds alternate, turn by turn, between the same two-stage turn
 * sent three ways: to the project without a budget (one indexed read finds none); the floor, the
 * same without a budget but with the turn budget an admission gives a turn (`turnTokenBudget`
 * 16000, BUDGET_TURN_RESERVE_TOKENS' default: a turn under a budget runs with it, and that turn
 * budget is TURN_TOKEN_BUDGET's feature, not the admission's); and under a budget that never runs
 * out (the admission locks the budget row, reads its counters, inserts the reservation; the run's
 * closing statement settles it). Each round sends `turns` turns of each; per round the median turn
 * time of each, and over all rounds the median of the per-round ratios, to the floor and to the
 * run without budgets. Before the rounds the project gets `seed` ended runs this month, and the
 * admission statement alone is timed (`statements` admissions, each released; its floor: one write
 * of the budget row and its commit) beside the sum over the period's runs that the admission
 * computed before its counters (migration 1764720000000),
 * so what does and does not grow with a project's runs shows. PGlite in memory, then, with
 * DATABASE_URL, PostgreSQL in a scratch database on its server (dropped afterwards).
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { DataSource } from 'typeorm';
import { BenchReport } from './report';
import { scratchDatabase } from './load/scratch-db';
import { serviceInProcess } from './support/service-in-process';

// runtime from dist (the service's own instance of the repository), types from src
/* eslint-disable @typescript-eslint/no-require-imports */
const { BudgetRepository } = require('../dist/chat/repositories/budget.repository') as typeof import('../src/chat/repositories/budget.repository');

const arg = (name: string, d: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || d;
const ROUNDS = arg('rounds', 6);
const TURNS = arg('turns', 30);
const SEED = arg('seed', 3000);
const STATEMENTS = arg('statements', 200);
/** what a turn under a budget reserves and runs with when nothing else sets its turn budget (BUDGET_TURN_RESERVE_TOKENS' default) */
const RESERVE = 16_000;
const COLUMNS = ['round', 'no budget ms', 'floor ms', 'budget ms', 'diff ms', 'ratio', 'ratio to no budget'];

/** What the admission summed before its counters: the period's ended runs of the project and its live reservations (1764680000000-budget-admit.ts). */
const OLD_SUM = `SELECT COALESCE(sum(t), 0)::float8, COALESCE(sum(c), 0)::float8 FROM (
    SELECT COALESCE((r.usage->>'totalTokens')::bigint, 0) AS t, COALESCE((r.usage->>'cost')::numeric, 0) AS c
      FROM runs r WHERE r.project_id = $1 AND r.created_at >= date_trunc('month', now()) AND r.status NOT IN ('running', 'awaiting_approval', 'paused')
    UNION ALL
    SELECT v.tokens, v.cost FROM budget_reservations v LEFT JOIN runs r ON r.request_id = v.request_id
     WHERE v.project_id = $1 AND v.created_at >= date_trunc('month', now()) AND (r.status IN ('running', 'awaiting_approval', 'paused') OR r.request_id IS NULL)
  ) u`;

/** Ended runs of the project in this month, as many turns would leave them. */
async function seedRuns(ds: DataSource, n: number): Promise<void> {
  if (n <= 0) return;
  const [{ id }] = (await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('default', 'bench seed') RETURNING id`)) as Array<{ id: string }>;
  await ds.query(
    `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, options, usage)
     SELECT gen_random_uuid(), $1, 'default', 'two-stage', 'completed', '{}'::jsonb, '{"totalTokens": 400, "cost": 0.001, "llmCalls": 1}'::jsonb FROM generate_series(1, $2::int)`,
    [id, n],
  );
}

/** Median ms of `n` calls of `f`, one after the other. */
async function timed(n: number, f: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

function turn(port: number, options?: Record<string, unknown>): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ content: 'Summarize docs/roadmap.md', ...(options && { options }) }));
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round2 = (x: number) => Math.round(x * 100) / 100;

interface Measured {
  db: string;
  admitOnly: number;
  admitMs: number;
  writeMs: number;
  releaseMs: number;
  oldSumMs: number;
  plain: number;
  plainRatio: number;
  floor: number;
  budget: number;
  ratio: number;
  rows: string[][];
  runs: number;
}

/** One database: the statements alone, then the rounds of turns. */
async function measure(db: string, databaseUrl: string): Promise<Measured> {
  // a cost budget needs a price for the model (it is refused otherwise); both sides of the comparison are priced alike
  const { app, port } = await serviceInProcess({ DATABASE_URL: databaseUrl, LLM_PRICES: JSON.stringify({ bench: { input: 0.15, output: 0.6 } }) });
  try {
    const url = `http://127.0.0.1:${port}/api/admin/projects/default/budget`;
    // the same project with and without its budget (set and removed between turns, outside the timed send)
    const budgetOn = async () => {
      const res = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ period: 'month', tokens: 1e12, cost: 1e9, warnAt: 0.9 }) });
      if (res.status !== 200) throw new Error(`PUT budget: HTTP ${res.status}`);
    };
    const budgetOff = async () => {
      await fetch(url, { method: 'DELETE' });
    };
    // the admission statement alone, and the sum it no longer computes, over the seeded period
    const ds = app.get(DataSource);
    const budgets = app.get(BudgetRepository);
    await seedRuns(ds, SEED);
    await budgetOn();
    const admitMs = await timed(STATEMENTS, async () => {
      const requestId = randomUUID();
      await budgets.admit('default', null, { requestId, tokens: 1000, cost: 0.01 }, new Date());
      await budgets.release(requestId);
    });
    const releaseMs = await timed(STATEMENTS, () => budgets.release(randomUUID()));
    // the statement floor: one write of the same budget row and its commit (on PostgreSQL the commit's WAL flush is most of an admission)
    const writeMs = await timed(STATEMENTS, () => ds.query(`UPDATE budgets SET warn_at = warn_at WHERE scope = 'project' AND scope_id = 'default'`));
    const oldSumMs = await timed(STATEMENTS, () => ds.query(OLD_SUM, ['default']));
    // the floor: the same turn with the turn budget a budget's admission gives it (BUDGET_TURN_RESERVE_TOKENS), so the
    // difference is the admission's; `plain` is the turn as sent without any budget, for what a user sees change
    const plainTurn = async () => (await budgetOff(), turn(port));
    const floorTurn = async () => (await budgetOff(), turn(port, { turnTokenBudget: RESERVE }));
    const budgetTurn = async () => (await budgetOn(), turn(port));
    // warm up both paths (JIT, prepared statements, the workspace folder of each project)
    for (let i = 0; i < 5; i++) {
      await plainTurn();
      await floorTurn();
      await budgetTurn();
    }
    const rows: string[][] = [];
    const ratios: number[] = [];
    const plainRatios: number[] = [];
    const plainAll: number[] = [];
    const floorAll: number[] = [];
    const budgetAll: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const plain: number[] = [];
      const floor: number[] = [];
      const budget: number[] = [];
      // interleaved turn by turn, so drift in the machine's load falls on all alike
      for (let i = 0; i < TURNS; i++) {
        plain.push(await plainTurn());
        floor.push(await floorTurn());
        budget.push(await budgetTurn());
      }
      const [p, f, b] = [median(plain), median(floor), median(budget)];
      ratios.push(b / f);
      plainRatios.push(b / p);
      plainAll.push(...plain);
      floorAll.push(...floor);
      budgetAll.push(...budget);
      rows.push([String(r + 1), round2(p).toFixed(2), round2(f).toFixed(2), round2(b).toFixed(2), round2(b - f).toFixed(2), (b / f).toFixed(3), (b / p).toFixed(3)]);
    }
    const m: Measured = {
      db,
      admitOnly: round2(admitMs - releaseMs),
      admitMs: round2(admitMs),
      writeMs: round2(writeMs),
      releaseMs: round2(releaseMs),
      oldSumMs: round2(oldSumMs),
      plain: round2(median(plainAll)),
      plainRatio: Math.round(median(plainRatios) * 1000) / 1000,
      floor: round2(median(floorAll)),
      budget: round2(median(budgetAll)),
      ratio: Math.round(median(ratios) * 1000) / 1000,
      rows,
      runs: SEED + 3 * (5 + ROUNDS * TURNS),
    };
    console.log(`\n${db}: admission statement alone (${SEED} ended runs of the project this month, median of ${STATEMENTS}): admit ${m.admitOnly} ms (admit + release ${m.admitMs} ms, release alone ${m.releaseMs} ms); one write of the budget row and its commit (floor) ${m.writeMs} ms; the period's sum the admission computed before its counters: ${m.oldSumMs} ms`);
    console.log(`${db}: send → done of a two-stage turn, ${ROUNDS} rounds × ${TURNS} turns each`);
    console.log(`${COLUMNS.join('  ')}   (floor: no budget, turnTokenBudget ${RESERVE} as an admission gives it)`);
    for (const row of rows) console.log(row.map((c) => c.padStart(6)).join('  '));
    console.log(
      `median: no budget ${m.plain} ms · no budget, same turn budget (floor) ${m.floor} ms · under a budget ${m.budget} ms · +${round2(m.budget - m.floor)} ms over the floor · ` +
        `ratio of per-round medians to the floor ${m.ratio.toFixed(3)}, to no budget ${m.plainRatio.toFixed(3)}; the budget project ended with ${m.runs} runs this month`,
    );
    return m;
  } finally {
    await app.close();
  }
}

async function main() {
  const measured = [await measure('PGlite in memory', 'memory://')];
  const pg = process.env.DATABASE_URL ? await scratchDatabase(process.env.DATABASE_URL) : null;
  if (pg) {
    try {
      measured.push(await measure('PostgreSQL', pg.url));
    } finally {
      await pg.drop();
    }
  } else console.log('\nPostgreSQL: skipped (no DATABASE_URL)');
  const report = new BenchReport(
    'budget',
    'What the project budget admission adds to a send: a two-stage turn on the scripted model, sent to the project without a budget, ' +
      'without a budget but with the turn budget an admission gives (the floor), and under a budget that never runs out, interleaved turn by turn; ' +
      'per round the median turn time (send until the response ends). ' +
      'Before the rounds, the admission statement alone and the period sum it no longer computes, over the seeded runs. PGlite, and PostgreSQL with DATABASE_URL.',
    { rounds: ROUNDS, turnsPerRound: TURNS, seededRuns: SEED, statements: STATEMENTS, databases: measured.map((m) => m.db), budgetProjectRuns: measured[0].runs },
  );
  for (const m of measured) {
    const k = m.db === 'PostgreSQL' ? 'postgres' : 'pglite';
    report
      .add(`${k}.admit.statement.ms`, `${m.db}: the admission statement alone with its commit (admit minus release of an unknown id), median, over ${SEED} ended runs this month (floor: one write of the budget row and its commit)`, m.admitOnly, 'ms', { floor: m.writeMs })
      .add(`${k}.old.sum.ms`, `${m.db}: the period's sum the admission computed before its counters, median, same runs`, m.oldSumMs, 'ms')
      .add(`${k}.turn.median.ms`, `${m.db}: send → end of response under a budget, median (floor: no budget, the same turn budget)`, m.budget, 'ms', { floor: m.floor })
      .add(`${k}.plain.median.ms`, `${m.db}: send → end of response without any budget, median`, m.plain, 'ms')
      .add(`${k}.added.median.ms`, `${m.db}: added by the admission (budget minus floor), median`, round2(m.budget - m.floor), 'ms')
      .add(`${k}.ratio.median`, `${m.db}: median of the per-round ratios budget / floor`, m.ratio, '')
      .add(`${k}.plain.ratio.median`, `${m.db}: median of the per-round ratios budget / no budget`, m.plainRatio, '')
      .table(`${k}.rounds`, `${m.db}, per round (median turn ms)`, COLUMNS, m.rows);
  }
  report.write();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
