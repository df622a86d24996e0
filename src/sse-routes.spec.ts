import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

/**
 * Guards against the SSE route patterns issue #31 removed coming back (read from the syntax tree
 * of every controller):
 * - a route is declared by `@Sse(path, { method })` alone: `@Post`/`@Get` stacked over `@Sse`
 *   worked only because the last decorator wins;
 * - a controller never turns a generator into a stream by hand: no `.next()` or `for await`
 *   anywhere in its file, from rxjs only `map`, `EMPTY` and the `Observable` type (no `from`,
 *   `defer`, `Subject`), and each `@Sse` method either calls `fromGenerator(` or takes its stream
 *   from a service (`this.<service>.<method>(`), where the services build it with
 *   `fromGenerator` (whose teardown returns the generator when the client leaves);
 * - no controller builds its own `new Observable(`.
 */
const SRC = __dirname;
const HTTP_METHODS = new Set(['Get', 'Post', 'Put', 'Patch', 'Delete', 'Head', 'Options', 'All']);
/** What a controller may take from rxjs: mapping a service's stream, the empty stream, the type. A
 * controller that imports `from`, `defer` or a `Subject` is building a stream the helper should build. */
const RXJS_IN_CONTROLLERS = new Set(['map', 'EMPTY', 'Observable']);

function controllers(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'public' ? [] : controllers(p);
    return e.name.endsWith('.controller.ts') ? [p] : [];
  });
}

const decoratorName = (d: ts.Decorator): string | undefined => {
  const e = d.expression;
  if (ts.isCallExpression(e) && ts.isIdentifier(e.expression)) return e.expression.text;
  return ts.isIdentifier(e) ? e.text : undefined;
};

/** What breaks the rules in one controller's text (empty when nothing does). */
export function sseRouteViolations(file: string, text = readFileSync(file, 'utf8')): string[] {
  const rel = relative(SRC, file);
  const source = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  if (/\bnew\s+Observable\s*[<(]/.test(text)) found.push(`${rel}: builds its own new Observable( (an SSE route returns fromGenerator or a service's stream)`);
  for (const m of text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*['"]rxjs['"]/g)) {
    const names = m[1].split(',').map((n) => n.replace(/^\s*type\s+/, '').split(/\s+as\s+/)[0].trim()).filter(Boolean);
    const extra = names.filter((n) => !RXJS_IN_CONTROLLERS.has(n));
    if (extra.length) found.push(`${rel}: imports ${extra.join(', ')} from rxjs (a controller maps a stream; fromGenerator builds it)`);
  }
  // a pump anywhere in the file (a private method, a function beside the class), not only in the route
  if (/\.next\s*\(/.test(text) || /\bfor\s+await\b/.test(text)) found.push(`${rel}: steps a generator by hand (.next() or for await): return fromGenerator(...)`);
  const visit = (node: ts.Node) => {
    if (ts.isMethodDeclaration(node) && node.body) {
      const names = (ts.getDecorators(node) ?? []).map(decoratorName);
      if (names.includes('Sse')) {
        const method = `${rel}: ${node.name.getText(source)}()`;
        const http = names.filter((n) => n && HTTP_METHODS.has(n));
        if (http.length) found.push(`${method}: @${http.join(', @')} stacked with @Sse (use @Sse(path, { method }))`);
        const body = node.body.getText(source);
        if (!/\bfromGenerator\s*\(/.test(body) && !/\bthis\.\w+\.\w+\s*\(/.test(body)) found.push(`${method}: neither calls fromGenerator( nor takes its stream from a service`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('SSE routes', () => {
  it('are declared by @Sse alone and stream through fromGenerator or a service, in every controller', () => {
    const files = controllers(SRC);
    // the scan sees the SSE routes (chat, runs, orchestration)
    expect(files.filter((f) => /@Sse\(/.test(readFileSync(f, 'utf8'))).length).toBeGreaterThanOrEqual(3);
    expect(files.flatMap((f) => sseRouteViolations(f))).toEqual([]);
  });

  const controller = join(SRC, 'orchestration', 'orchestration.controller.ts');
  const original = readFileSync(controller, 'utf8');

  const FILE = 'orchestration/orchestration.controller.ts';
  const ROUTE = `${FILE}: executeStream()`;
  const SSE_DECORATOR = "@Sse('execute/stream', { method: RequestMethod.POST })";
  const RXJS_IMPORT = "import type { Observable } from 'rxjs';";
  const HELPER_CALL = 'const events = fromGenerator(gen, {';
  const OWN_OBSERVABLE = `${FILE}: builds its own new Observable( (an SSE route returns fromGenerator or a service's stream)`;
  const STEPPED = `${FILE}: steps a generator by hand (.next() or for await): return fromGenerator(...)`;

  /** Each case breaks the real controller one way (a replace that no longer matches fails the case) and names what the scan must report. */
  const injected: Array<[string, Array<[string | RegExp, string]>, string, string[]]> = [
    ['@Post stacked over @Sse', [[SSE_DECORATOR, "@Post('execute/stream')\n  @Sse()"]], '', [`${ROUTE}: @Post stacked with @Sse (use @Sse(path, { method }))`]],
    ['@Head stacked over @Sse', [[SSE_DECORATOR, "@Head('execute/stream')\n  @Sse()"]], '', [`${ROUTE}: @Head stacked with @Sse (use @Sse(path, { method }))`]],
    [
      'a route pumping the generator into its own Observable',
      [[/const events = fromGenerator\(gen, \{[\s\S]*?\n {4}\}\);/, 'const events = new Observable<WireMessage>((s) => { void (async () => { for (let r = await gen.next(); !r.done; r = await gen.next()) s.next({ id: 0, type: "progress", data: r.value }); s.complete(); })(); });']],
      '',
      [OWN_OBSERVABLE, STEPPED],
    ],
    ['a for await over the generator in the route', [[HELPER_CALL, 'for await (const s of gen) void s;\n    const events = from(gen, {']], '', [STEPPED]],
    [
      "rxjs's from() instead of the helper",
      [[HELPER_CALL, 'const events = from(gen, {'], [RXJS_IMPORT, "import { from, type Observable } from 'rxjs';"]],
      '',
      [`${FILE}: imports from from rxjs (a controller maps a stream; fromGenerator builds it)`],
    ],
    [
      'a Subject fed by a pump beside the class',
      [[RXJS_IMPORT, "import { Subject, type Observable } from 'rxjs';"]],
      '\nasync function pump(g: AsyncGenerator<unknown>, s: Subject<unknown>) { for (let r = await g.next(); !r.done; r = await g.next()) s.next(r.value); }\n',
      [`${FILE}: imports Subject from rxjs (a controller maps a stream; fromGenerator builds it)`, STEPPED],
    ],
    [
      'neither the helper nor a service',
      [[HELPER_CALL, 'const events = from(gen, {'], ['const gen = this.orchestration.executeModeStream({ ...req, signal });', 'const gen = makeStream({ ...req, signal });']],
      '',
      [`${ROUTE}: neither calls fromGenerator( nor takes its stream from a service`],
    ],
  ];

  it.each(injected)('reports %s (self-test)', (_, replacements, appended, expected) => {
    let text = original;
    for (const [from, to] of replacements) {
      const next = text.replace(from, to);
      expect(next).not.toBe(text);
      text = next;
    }
    expect(sseRouteViolations(controller, text + appended)).toEqual(expected);
  });
});
