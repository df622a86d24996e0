import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Tests wait for the event, row or condition they need, never for a fixed time (issue #31), and
 * assert behaviour, not how long it took. What this scan reports, per line of every test file
 * (*.spec.ts, *.e2e-spec.ts, *.medium-spec.ts, *.browser-spec.ts, test/support, test/faults):
 * - a setTimeout wrapped in a Promise (`new Promise((r) => setTimeout(r, 100))`, the usual sleep);
 * - Playwright's `waitForTimeout(`;
 * - an awaited call of a sleep-named helper: `await sleep(`, `await delay(`;
 * - best effort for wall-clock assertions: an `expect(` whose argument subtracts from
 *   `Date.now()` or `performance.now()` on the same line.
 * A delay that is itself the behaviour under test (a slow model, a stalling client) goes through
 * test/support/scripted-delay.ts; polling goes through test/support/wait-for.ts. Those two files
 * are the only ones allowed a Promise-wrapped setTimeout. Not caught: a timestamp difference stored
 * in a variable first and compared later, or a sleep spelled another way.
 */
const ROOT = join(__dirname, '..', '..');
const ALLOWED = new Set(['test/support/wait-for.ts', 'test/support/scripted-delay.ts', 'test/lint/no-fixed-sleeps.spec.ts']);

const RULES: Array<[RegExp, string]> = [
  [/new Promise\b[^;]*?\bsetTimeout\s*\(/, 'a Promise-wrapped setTimeout (a fixed sleep): wait with waitFor, or use scriptedDelay for a delay under test'],
  [/\bwaitForTimeout\s*\(/, 'waitForTimeout (a fixed sleep): wait for the element, request or state'],
  [/\bawait\s+(sleep|delay)\s*\(/, 'an awaited sleep helper: wait with waitFor, or use scriptedDelay for a delay under test'],
  [/\bexpect\s*\([^;]*\b(Date|performance)\.now\(\)\s*-/, 'a wall-clock difference in expect(): assert ordering or counts; timings belong in a bench'],
];

export function findSleeps(file: string, text: string): string[] {
  if (ALLOWED.has(file)) return [];
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const [rule, why] of RULES) if (rule.test(line)) found.push(`${file}:${i + 1}: ${why}\n    ${line.trim()}`);
  });
  return found;
}

const isTestFile = (rel: string) =>
  /\.(spec|e2e-spec|medium-spec|browser-spec)\.ts$/.test(rel) || ((rel.startsWith('test/support/') || rel.startsWith('test/faults/')) && rel.endsWith('.ts'));

function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFiles(rel);
    return isTestFile(rel) ? [rel] : [];
  });
}

describe('no fixed sleeps or wall-clock assertions in tests', () => {
  it('finds none in the test files', () => {
    const files = [...testFiles('src'), ...testFiles('test')];
    expect(files.length).toBeGreaterThan(100); // the scan sees the suite
    expect(files.flatMap((f) => findSleeps(f, readFileSync(join(ROOT, f), 'utf8')))).toEqual([]);
  });

  it('reports each kind it looks for (self-test)', () => {
    const injected = [
      'await new Promise((r) => setTimeout(r, 200));',
      'await page.waitForTimeout(200);',
      'await sleep(100);',
      'expect(Date.now() - started).toBeLessThan(1000);',
      'expect(performance.now() - t0).toBeLessThan(5);',
      'await waitFor(() => done, { what: "done" });',
      'setTimeout(() => controller.abort(), 100);',
      'await scriptedDelay(150);',
    ].join('\n');
    const found = findSleeps('test/e2e/injected.e2e-spec.ts', injected);
    expect(found.map((f) => Number(/:(\d+):/.exec(f)![1]))).toEqual([1, 2, 3, 4, 5]);
    expect(findSleeps('test/support/wait-for.ts', injected)).toEqual([]);
  });
});
