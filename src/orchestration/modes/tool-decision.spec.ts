import { Logger } from '@nestjs/common';
import { finish, say, ScriptedLlm } from '../../../test/support/scripted-llm';
import type { ToolRunner } from '../../tools/tool-runner.port';
import type { TraceRecord } from '../../trace/trace-sink.port';
import { contentLoopSettings } from '../loops/loop-settings';
import type { ToolCallsResult, ToolModeInput } from './tool-calls-result';
import { decideAndExecute } from './tool-decision';

const SPEC = [{ name: 'list_files', description: 'List files', parameters: { type: 'object', properties: {} } }];

async function decide(text: string, contentLoop?: ToolModeInput['contentLoop']) {
  const records: TraceRecord[] = [];
  const deps = { llm: new ScriptedLlm([[...say(text), finish('stop')]]), tools: {} as ToolRunner, trace: { record: (r: TraceRecord) => records.push(r), flush: async () => undefined }, logger: new Logger('test') };
  const input: ToolModeInput = { requestId: 'r1', projectId: 'p', userInput: 'list the files', participantIds: [], options: { maxCalls: 2, narrowTopK: 5, minScoreThreshold: 0, locale: 'en' }, signal: new AbortController().signal, contentLoop };
  const it = decideAndExecute(deps, 'Classic', input, SPEC, performance.now());
  let r = await it.next();
  while (!r.done) r = await it.next();
  return { result: r.value as ToolCallsResult, records };
}

describe('the tool-only decision and content loops', () => {
  it('a decision whose text repeats one passage and calls no tool ends with error content_loop, traced for its mode', async () => {
    const { result, records } = await decide('I will list the files now. '.repeat(60));
    expect(result).toMatchObject({ error: 'content_loop', isSuccess: false, mode: 'Classic' });
    expect(result.errorMessage).toMatch(/repeated one passage \(27 characters\)/);
    expect(records.filter((r) => r.type === 'loop_detected').map((r) => r.details)).toEqual([expect.objectContaining({ kind: 'content', in: 'text', period: 27, route: 'Classic', verdict: 'end' })]);
  });

  it('a decision that writes without looping, or with detection off, is still no_tool_calls', async () => {
    expect((await decide('There is nothing to call here.')).result.error).toBe('no_tool_calls');
    const off = await decide('I will list the files now. '.repeat(60), contentLoopSettings(0));
    expect(off.result.error).toBe('no_tool_calls');
    expect(off.records.some((r) => r.type === 'loop_detected')).toBe(false);
  });
});
