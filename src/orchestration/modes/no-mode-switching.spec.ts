import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { OrchestrationService } from '../orchestration.service';
import type { ToolCallsResult, ToolModeInput, ToolModeStrategy } from './tool-calls-result';

/** these tests dispatch by name only; the turn ports are not used (the configuration answers with the defaults: none) */
const NO_PORTS = [{ get: () => undefined }, {}, {}, {}] as unknown as [never, never, never, never];

/**
 * Issue #6: a caller always gets the mode it asked for. These checks keep the modes' folder
 * free of automatic switching — no mode reaches another, nothing in the folder dispatches.
 */
const MODES_DIR = __dirname;

function sources(dir: string): Array<{ file: string; text: string }> {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    if (!name.endsWith('.ts') || name.endsWith('.spec.ts')) return [];
    return [{ file: path.slice(MODES_DIR.length + 1), text: readFileSync(path, 'utf8') }];
  });
}

describe('tool-only modes never switch', () => {
  const files = sources(MODES_DIR);

  it('finds the mode sources', () => {
    expect(files.map((f) => f.file)).toEqual(expect.arrayContaining(['classic.strategy.ts', 'narrow-top-k.strategy.ts', 'tool-decision.ts']));
  });

  it('no mode imports or names another mode', () => {
    const classic = files.find((f) => f.file === 'classic.strategy.ts')!.text;
    const narrow = files.find((f) => f.file === 'narrow-top-k.strategy.ts')!.text;
    expect(narrow).not.toMatch(/classic\.strategy|ClassicStrategy|['"`]Classic['"`]/);
    expect(classic).not.toMatch(/narrow-top-k\.strategy|NarrowTopKStrategy|['"`]NarrowTopK['"`]|ToolIndexService/);
  });

  it('nothing in the folder dispatches to a mode or retries with another', () => {
    for (const { file, text } of files) {
      expect({ file, dispatches: /OrchestrationService|PROTOCOL_STRATEGIES|\.mode\(|executeModeStream|fallback/i.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')) }).toEqual({ file, dispatches: false });
    }
  });

  it('the shared decision step reports the mode it was given', () => {
    const decision = files.find((f) => f.file === 'tool-decision.ts')!.text;
    expect(decision).not.toMatch(/mode:\s*['"`](Classic|NarrowTopK)['"`]/);
  });

  it('OrchestrationService runs exactly the requested mode, even when it fails', async () => {
    const calls: string[] = [];
    const mode = (name: 'Classic' | 'NarrowTopK', fail: boolean): ToolModeStrategy => ({
      kind: 'tool-mode',
      name,
      async *execute(input: ToolModeInput): AsyncGenerator<never, ToolCallsResult, undefined> {
        calls.push(name);
        if (fail) throw new Error('index exploded');
        return { mode: name, exposedTools: [], decidedCalls: [], executions: [], isSuccess: false, error: 'narrow_topk_unavailable', totalLatencyMs: 0, requestId: input.requestId };
      },
    });
    const svc = new OrchestrationService([mode('Classic', false), mode('NarrowTopK', true)], ...NO_PORTS);
    const req = { userInput: 'x', participantIds: [], projectId: 'p', options: { maxCalls: 1, narrowTopK: 5, minScoreThreshold: 0, locale: 'en' } };
    const r = await svc.execute({ ...req, mode: 'NarrowTopK' });
    expect(calls).toEqual(['NarrowTopK']);
    expect(r).toMatchObject({ mode: 'NarrowTopK', isSuccess: false, error: 'internal_error', errorMessage: 'index exploded' });
    expect(() => svc.mode('Hybrid')).toThrow(/Unknown mode: Hybrid/);
    expect(() => new OrchestrationService([mode('Classic', false), mode('Classic', false)], ...NO_PORTS)).toThrow(/Duplicate tool mode name: Classic/);
  });
});
