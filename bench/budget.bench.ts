/**
 * npm run bench:budget  [-- --rounds 6 --turns 30]
 *
 * What the budget admission (issue 46) adds to a send. The built service in this process on the
 * scripted model (bench/support); rounds alternate between the floor, the same two-stage turn in
 * the project without a budget (one indexed read finds none), and the same project under a budget
 * that never runs out (the admission locks the budget row, sums the period's runs and reservations,
 * inserts the reservation). Each round sends `turns` turns one after the other; per round the
 * median turn time of each, and over all rounds the median of the per-round ratios. The period's
 * sum reads every run of the project this month, so the budget project's run count is printed
 * too. PGlite in memory unless DATABASE_URL is set.
 */
import { request } from 'node:http';
import { BenchReport } from './report';
import { serviceInProcess } from './support/service-in-process';

const arg = (name: string, d: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || d;
const ROUNDS = arg('rounds', 6);
const TURNS = arg('turns', 30);

function turn(port: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ content: 'Summarize docs/roadmap.md' }));
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round2 = (x: number) => Math.round(x * 100) / 100;

async function main() {
  const { app, port } = await serviceInProcess();
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
    const floorTurn = async () => (await budgetOff(), turn(port));
    const budgetTurn = async () => (await budgetOn(), turn(port));
    // warm up both paths (JIT, prepared statements, the workspace folder of each project)
    for (let i = 0; i < 5; i++) {
      await floorTurn();
      await budgetTurn();
    }
    const rows: string[][] = [];
    const ratios: number[] = [];
    const floorAll: number[] = [];
    const budgetAll: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const floor: number[] = [];
      const budget: number[] = [];
      // interleaved turn by turn, so drift in the machine's load falls on both alike
      for (let i = 0; i < TURNS; i++) {
        floor.push(await floorTurn());
        budget.push(await budgetTurn());
      }
      const [f, b] = [median(floor), median(budget)];
      ratios.push(b / f);
      floorAll.push(...floor);
      budgetAll.push(...budget);
      rows.push([String(r + 1), round2(f).toFixed(2), round2(b).toFixed(2), round2(b - f).toFixed(2), (b / f).toFixed(3)]);
    }
    const [f, b, ratio] = [median(floorAll), median(budgetAll), median(ratios)];
    const runs = 2 * (5 + ROUNDS * TURNS);
    console.log(`send → done of a two-stage turn, ${ROUNDS} rounds × ${TURNS} turns each, ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory'}`);
    console.log('round  no budget ms  budget ms  diff ms  ratio');
    for (const row of rows) console.log(row.map((c) => c.padStart(6)).join('  '));
    console.log(`median: no budget ${round2(f)} ms · under a budget ${round2(b)} ms · +${round2(b - f)} ms · ratio of per-round medians ${ratio.toFixed(3)}; the budget project ended with ${runs} runs this month`);
    new BenchReport(
      'budget',
      'What the project budget admission adds to a send: a two-stage turn on the scripted model, sent to the project without a budget (the floor) ' +
        'and under a budget that never runs out, interleaved turn by turn; per round the median turn time (send until the response ends).',
      { rounds: ROUNDS, turnsPerRound: TURNS, database: process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory', budgetProjectRuns: runs },
    )
      .add('turn.median.ms', 'send → end of response under a budget, median', round2(b), 'ms', { floor: round2(f) })
      .add('added.median.ms', 'added by the admission, median', round2(b - f), 'ms')
      .add('ratio.median', 'median of the per-round ratios budget / no budget', Math.round(ratio * 1000) / 1000, '')
      .table('rounds', 'Per round (median turn ms)', ['round', 'no budget ms', 'budget ms', 'diff ms', 'ratio'], rows)
      .write();
  } finally {
    await app.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
