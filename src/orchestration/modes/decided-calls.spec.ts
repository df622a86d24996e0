import { Logger } from '@nestjs/common';
import type { ToolCallRequest, ToolRunner } from '../../tools/tool-runner.port';
import type { ToolRunResult } from '../../tools/tool-definition';
import type { TraceRecord } from '../../trace/trace-sink.port';
import type { DecidedPlan, ExecutionJournal, ExecutionProgress, ToolCallsResult, ToolExecution, ToolModeInput } from './tool-calls-result';
import { continueDecided, INTERRUPTED_MESSAGE } from './decided-calls';

/** A runner over two tools: `write` (a side effect) and `read` (read-only); it counts what it ran. */
function runner() {
  const ran: string[] = [];
  const tools: ToolRunner = {
    run: async (call: ToolCallRequest): Promise<ToolRunResult> => {
      ran.push(`${call.name}:${JSON.stringify(call.arguments)}`);
      return { toolName: call.name, args: call.arguments, outcome: 'success', output: { ok: call.name }, outputText: '{}', truncated: false, isError: false, latencyMs: 1, sources: [], signature: null };
    },
    signature: (call) => `${call.name}:${JSON.stringify(call.arguments)}`,
    specs: async () => [],
    redactArgs: (_n, a) => a,
    readOnly: (name) => name === 'read',
  };
  return { tools, ran };
}

const plan: DecidedPlan = {
  exposedTools: ['write', 'read'],
  calls: [{ toolName: 'write', args: { n: 1 } }, { toolName: 'write', args: { n: 2 } }, { toolName: 'read', args: { n: 3 } }],
  shown: [{ toolName: 'write', args: { n: 1 } }, { toolName: 'write', args: { n: 2 } }, { toolName: 'read', args: { n: 3 } }],
};
const done = (toolName: string): ToolExecution => ({ toolName, args: {}, outcome: 'success', resultObject: { ok: 'before' }, latencyMs: 5, isError: false });

async function continued(from: ExecutionProgress & { plan: DecidedPlan }) {
  const { tools, ran } = runner();
  const records: TraceRecord[] = [];
  const stored: Array<{ running?: number; finished?: number }> = [];
  const journal: ExecutionJournal = {
    resumed: from,
    decided: async () => undefined,
    starting: async (index) => void stored.push({ running: index }),
    finished: async (executions) => void stored.push({ finished: executions.length }),
  };
  const deps = { llm: { complete: () => Promise.reject(new Error('the model must not be asked')) } as never, tools, trace: { record: (r: TraceRecord) => records.push(r), flush: async () => undefined }, logger: new Logger('test') };
  const input: ToolModeInput = { requestId: 'r1', projectId: 'p', userInput: 'x', participantIds: [], options: { maxCalls: 3, narrowTopK: 5, minScoreThreshold: 0, locale: 'en' }, signal: new AbortController().signal, journal };
  const it = continueDecided(deps, 'Classic', input, from, performance.now());
  let r = await it.next();
  while (!r.done) r = await it.next();
  return { result: r.value as ToolCallsResult, ran, records, stored };
}

describe('continuing a keyed execution from its stored progress', () => {
  it('a cut-off call that is not read-only is interrupted, not run; finished calls are kept as stored; the rest run', async () => {
    const { result, ran, records, stored } = await continued({ plan, executions: [done('write')], running: 1 });
    expect(ran).toEqual(['read:{"n":3}']);
    expect(result.executions.map((e) => e.outcome)).toEqual(['success', 'interrupted', 'success']);
    expect(result.executions[0].resultObject).toEqual({ ok: 'before' });
    expect(result.executions[1]).toMatchObject({ toolName: 'write', args: { n: 2 }, isError: true, latencyMs: 0, resultObject: { error: 'interrupted', message: INTERRUPTED_MESSAGE } });
    expect(INTERRUPTED_MESSAGE).toContain('may or may not have run');
    expect(result).toMatchObject({ isSuccess: true, error: null, decidedCalls: plan.shown });
    expect(stored).toEqual([{ finished: 2 }, { running: 2 }, { finished: 3 }]);
    expect(records.map((r) => r.type)).toEqual(expect.arrayContaining(['tool_execution_continued', 'tool_call_interrupted']));
  });

  it('a cut-off read-only call runs again', async () => {
    const { result, ran } = await continued({ plan, executions: [done('write'), done('write')], running: 2 });
    expect(ran).toEqual(['read:{"n":3}']);
    expect(result.executions.map((e) => e.outcome)).toEqual(['success', 'success', 'success']);
  });

  it('an execution stopped between calls runs the next one; one whose calls all finished runs nothing', async () => {
    expect((await continued({ plan, executions: [done('write')], running: null })).ran).toEqual(['write:{"n":2}', 'read:{"n":3}']);
    const all = await continued({ plan, executions: [done('write'), done('write'), done('read')], running: null });
    expect(all.ran).toEqual([]);
    expect(all.result.executions).toHaveLength(3);
  });
});
