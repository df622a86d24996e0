import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

/**
 * Tests wait for the event, row or condition they need, never for a fixed time (issue #31), and
 * assert behaviour, not how long it took. What this scan reports, over the whole text of every
 * test file (*.spec.ts, *.e2e-spec.ts, *.medium-spec.ts, *.browser-spec.ts, and every file in
 * test/support, test/faults and test/deploy; bench/ is left out: benches time things):
 * - a setTimeout wrapped in a Promise (`new Promise((r) => setTimeout(r, 100))`, the usual sleep),
 *   also when the formatter put the setTimeout on a following line;
 * - an awaited setTimeout from `node:timers/promises` (under its own name or an alias);
 * - Playwright's `waitForTimeout(`;
 * - an awaited call of a sleep-named helper: `await sleep(`, `await delay(`;
 * - `await scriptedDelay(` directly in a test's callback (`it`, `test`, `before*`/`after*`): a
 *   delay under test belongs to the scripted component (a fake tool, model, repository, server or
 *   a named helper), never to the test body, where it could only be a wait (found on the syntax
 *   tree, so a nested function of the scripted component is told apart from the test body);
 * - best effort for wall-clock assertions: an `expect(` whose argument subtracts from
 *   `Date.now()` or `performance.now()`, or names a variable that holds such a difference or
 *   a timestamp taken with them (`const t0 = Date.now(); ...; expect(end - t0)`).
 * A delay that is itself the behaviour under test goes through test/support/scripted-delay.ts;
 * polling goes through test/support/wait-for.ts. Those two files are the only ones allowed a
 * Promise-wrapped setTimeout. Not caught: a sleep spelled another way (a hand-made helper with a
 * neutral name), or a timing compared through a function call.
 */
const ROOT = join(__dirname, '..', '..');
const ALLOWED = new Set(['test/support/wait-for.ts', 'test/support/scripted-delay.ts', 'test/lint/no-fixed-sleeps.spec.ts']);

/** Rules matched over the whole text; a match may span lines (the report names its first line). */
const RULES: Array<[RegExp, string]> = [
  [/new Promise\b[^;]{0,160}?\bsetTimeout\s*\(/g, 'a Promise-wrapped setTimeout (a fixed sleep): wait with waitFor, or use scriptedDelay for a delay under test'],
  [/\bwaitForTimeout\s*\(/g, 'waitForTimeout (a fixed sleep): wait for the element, request or state'],
  [/\bawait\s+(sleep|delay)\s*\(/g, 'an awaited sleep helper: wait with waitFor, or use scriptedDelay for a delay under test'],
  [/\bexpect\s*\([^;]*?\b(Date|performance)\.now\(\)\s*-/g, 'a wall-clock difference in expect(): assert ordering or counts; timings belong in a bench'],
];

const TIMERS_PROMISES = /import\s*\{([^}]*)\}\s*from\s*['"](?:node:)?timers\/promises['"]/g;
const CLOCK_VAR = /\b(?:const|let|var)?\s*(\w+)\s*=\s*[^;\n]*\b(?:Date|performance)\.now\(\)/g;
const TEST_CALLBACK = new Set(['it', 'test', 'beforeEach', 'beforeAll', 'afterEach', 'afterAll']);

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

function matches(text: string, rule: RegExp): number[] {
  return [...text.matchAll(new RegExp(rule.source, rule.flags.includes('g') ? rule.flags : `${rule.flags}g`))].map((m) => m.index!);
}

/** `await x(` where x is setTimeout imported from timers/promises (or its alias). */
function timersPromisesSleeps(text: string): number[] {
  const names = [...text.matchAll(TIMERS_PROMISES)].flatMap((m) =>
    m[1]
      .split(',')
      .map((n) => n.trim().split(/\s+as\s+/))
      .filter(([imported]) => imported === 'setTimeout')
      .map(([imported, alias]) => alias ?? imported),
  );
  return names.flatMap((n) => matches(text, new RegExp(`\\bawait\\s+${n}\\s*(<[^>]*>)?\\(`)));
}

/**
 * An expect() over a wall-clock time kept in variables: a difference of two clock readings
 * (`expect(end - t0)`, `expect(performance.now() - t0)` is a RULE) or a variable holding one
 * (`const elapsed = Date.now() - t0; ... expect(elapsed)`). A timestamp compared as such
 * (`toBeGreaterThanOrEqual(before - 1)`, an ordering) is not a duration and is not reported.
 */
function storedClockAssertions(text: string): number[] {
  const assigned = [...text.matchAll(CLOCK_VAR)];
  if (assigned.length === 0) return [];
  const stamps = assigned.map((m) => m[1]);
  const clock = `(?:(?:Date|performance)\\.now\\(\\)|\\b(?:${stamps.join('|')})\\b)`;
  const difference = new RegExp(`${clock}\\s*-\\s*${clock}`);
  const elapsed = [...text.matchAll(/\b(?:const|let|var)?\s*(\w+)\s*=\s*([^;\n]*)/g)].filter((m) => difference.test(m[2])).map((m) => m[1]);
  const found = matches(text, new RegExp(`\\bexpect\\s*\\([^;\\n]*?${clock}\\s*-\\s*${clock}`));
  if (elapsed.length) found.push(...matches(text, new RegExp(`\\bexpect\\s*\\([^;\\n]*?\\b(?:${elapsed.join('|')})\\b`)));
  return found;
}

/** The callee's name of a test callback: it(...), it.each(...)(...), test.concurrent(...), it.only(...). */
function calleeName(expr: ts.Expression): string | undefined {
  if (ts.isIdentifier(expr)) return expr.text;
  if (ts.isPropertyAccessExpression(expr)) return calleeName(expr.expression);
  if (ts.isCallExpression(expr)) return calleeName(expr.expression);
  return undefined;
}

/** `await scriptedDelay(` whose nearest enclosing function is a test's own callback. */
function scriptedDelaysInTestBodies(file: string, text: string): number[] {
  if (!text.includes('scriptedDelay')) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: number[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isAwaitExpression(node) && ts.isCallExpression(node.expression) && ts.isIdentifier(node.expression.expression) && node.expression.expression.text === 'scriptedDelay') {
      let fn: ts.Node | undefined = node.parent;
      while (fn && !ts.isFunctionLike(fn)) fn = fn.parent;
      const call = fn?.parent;
      if (call && ts.isCallExpression(call) && TEST_CALLBACK.has(calleeName(call.expression) ?? '')) found.push(node.getStart(source));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

export function findSleeps(file: string, text: string): string[] {
  if (ALLOWED.has(file)) return [];
  const lines = text.split('\n');
  const report = (index: number, why: string) => {
    const line = lineOf(text, index);
    return { line, text: `${file}:${line}: ${why}\n    ${lines[line - 1].trim()}` };
  };
  const found = [
    ...RULES.flatMap(([rule, why]) => matches(text, rule).map((i) => report(i, why))),
    ...timersPromisesSleeps(text).map((i) => report(i, 'an awaited setTimeout from timers/promises (a fixed sleep): wait with waitFor')),
    ...storedClockAssertions(text).map((i) => report(i, 'a wall-clock time kept in a variable and asserted in expect(): timings belong in a bench')),
    ...scriptedDelaysInTestBodies(file, text).map((i) =>
      report(i, 'scriptedDelay awaited in a test body (a wait): wait for the condition; a delay under test belongs to the scripted component'),
    ),
  ];
  return found.sort((a, b) => a.line - b.line).map((f) => f.text);
}

const isTestFile = (rel: string) =>
  /\.(spec|e2e-spec|medium-spec|browser-spec)\.ts$/.test(rel) ||
  (['test/support/', 'test/faults/', 'test/deploy/'].some((dir) => rel.startsWith(dir)) && rel.endsWith('.ts'));

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
    expect(found.map(lineNo)).toEqual([1, 2, 3, 4, 5]);
    expect(findSleeps('test/support/wait-for.ts', injected)).toEqual([]);
  });

  it('reports the forms that span lines or hide behind a name (self-test)', () => {
    const cases: Array<[string, string[], number[]]> = [
      // the formatter's output: setTimeout on the line after new Promise
      ['multi-line Promise sleep', ['await new Promise<void>((resolve) =>', '  setTimeout(resolve, 100),', ');'], [1]],
      ['multi-line Promise sleep in a block', ['await new Promise((resolve) => {', '  setTimeout(resolve, 100);', '});'], [1]],
      ['timers/promises', ["import { setTimeout } from 'node:timers/promises';", 'await setTimeout(100);'], [2]],
      ['timers/promises, aliased', ["import { scheduler, setTimeout as pause } from 'timers/promises';", 'await pause(100);'], [2]],
      ['scriptedDelay in an it() body', ["it('x', async () => {", '  await scriptedDelay(100);', '});'], [2]],
      ['scriptedDelay in an it.each() body', ["it.each([1])('x %s', async () => {", '  await scriptedDelay(100);', '});'], [2]],
      ['scriptedDelay in a beforeEach body', ['beforeEach(async () => {', '  await scriptedDelay(100);', '});'], [2]],
      ['a stored elapsed time', ['const t0 = Date.now();', 'await work();', 'const elapsed = Date.now() - t0;', 'expect(elapsed).toBeLessThan(500);'], [4]],
      ['a difference of stored readings', ['const t0 = performance.now();', 'const t1 = performance.now();', 'expect(t1 - t0).toBeLessThan(5);'], [3]],
    ];
    for (const [what, lines, expected] of cases) expect([what, findSleeps('test/e2e/injected.e2e-spec.ts', lines.join('\n')).map(lineNo)]).toEqual([what, expected]);
  });

  it('leaves delays of scripted components, abort timers and timestamp orderings alone (self-test)', () => {
    const fine = [
      "it('a slow tool', async () => {",
      '  const exec = async () => {',
      '    await scriptedDelay(40); // the scripted tool is slow',
      '    return 1;',
      '  };',
      '  setTimeout(() => controller.abort(), 100);',
      '  const before = Date.now();',
      '  expect(recordedAt).toBeGreaterThanOrEqual(before - 1);',
      '});',
      "const repo = { insertMany: async () => { await scriptedDelay(5); } };",
    ].join('\n');
    expect(findSleeps('test/e2e/injected.e2e-spec.ts', fine)).toEqual([]);
  });
});

const lineNo = (finding: string) => Number(/:(\d+):/.exec(finding)![1]);
