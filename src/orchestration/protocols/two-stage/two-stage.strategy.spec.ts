import { answer, callTool, finish, say, ScriptedLlm, toolTurn, type ScriptedResponse } from '../../../../test/support/scripted-llm';
import { collect, doneOf, ofType, textOf } from '../../../../test/support/protocol-events';
import { MemoryTrace } from '../../../../test/support/memory-trace';
import type { ToolDefinition } from '../../../tools/tool-definition';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { ToolRunnerService } from '../../../tools/tool-runner.service';
import type { AppConfigService } from '../../../config/app-config.service';
import { OrchestrationService } from '../../orchestration.service';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { TwoStageStrategy } from './two-stage.strategy';

/** these tests dispatch by name only; the turn ports are not used */
const NO_PORTS = [{}, {}, {}, {}] as unknown as [never, never, never, never];

const fakeConfig = {
  get: (k: string) => ({ TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536 } as Record<string, unknown>)[k],
  list: () => [],
} as unknown as AppConfigService;

/** Tools that record their executions: a file lister and a reader with a default. */
function makeTools(trace: MemoryTrace) {
  const executions: Array<{ name: string; args: Record<string, unknown> }> = [];
  const registry = new ToolRegistryService(fakeConfig, trace);
  const def = (name: string, parameters: Record<string, unknown>, out: (a: Record<string, unknown>) => unknown): ToolDefinition => ({
    name,
    description: `${name} tool`,
    parameters,
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (args) => {
      executions.push({ name, args });
      return { output: out(args) };
    },
  });
  registry.register(
    def('list_files', { type: 'object', properties: { path: { type: 'string', default: '.' }, recursive: { type: 'boolean', default: false } }, additionalProperties: false }, (a) => ({
      path: a.path,
      entries: ['README.md', 'docs/'],
    })),
  );
  registry.register(
    def('read_file', { type: 'object', properties: { path: { type: 'string' }, maxBytes: { type: 'integer', default: 65536 } }, required: ['path'], additionalProperties: false }, (a) => ({
      path: a.path,
      content: `contents of ${a.path}`,
    })),
  );
  registry.register(
    def('query_api', { type: 'object', properties: { q: { type: 'string' }, credential: { type: 'string', 'x-secret': true } }, required: ['q'] }, (a) => ({ q: a.q, rows: 1 })),
  );
  return { runner: new ToolRunnerService(registry, fakeConfig, trace), executions };
}

function setup(script: ScriptedResponse[], over: Partial<ProtocolExecutionContext> = {}) {
  const trace = new MemoryTrace();
  const { runner, executions } = makeTools(trace);
  const llm = new ScriptedLlm(script);
  const abort = new AbortController();
  let pause = false;
  const ctx: ProtocolExecutionContext = {
    requestId: 'req-1',
    projectId: 'default',
    conversationId: 'conv-1',
    messages: [{ role: 'user', content: 'Summarize docs/roadmap.md' }],
    mode: 'act',
    llm,
    tools: runner,
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: abort.signal,
    control: { pauseRequested: () => pause },
    ...over,
  };
  return { ctx, llm, trace, executions, abort, requestPause: () => (pause = true) };
}

const text = textOf;

describe('TwoStageStrategy', () => {
  const strategy = new TwoStageStrategy();

  it('is registered as "two-stage" and a duplicate name stops the boot', () => {
    expect(strategy.name).toBe('two-stage');
    expect(new OrchestrationService([strategy], ...NO_PORTS).protocol('two-stage')).toBe(strategy);
    expect(() => new OrchestrationService([strategy, new TwoStageStrategy()], ...NO_PORTS)).toThrow(/Duplicate protocol strategy name: two-stage/);
    expect(() => new OrchestrationService([strategy], ...NO_PORTS).protocol('nope')).toThrow(/Unknown protocol/);
  });

  it('turns an adapter that throws into an llm error turn, like unified (one model-step helper)', async () => {
    const { ctx } = setup([]); // ScriptedLlm throws on the unexpected call
    const events = await collect(strategy.execute(ctx));
    expect(ofType(events, 'error')[0]).toMatchObject({ code: 'llm_provider_error', message: expect.stringContaining('unexpected model call') });
    expect(events.at(-1)).toMatchObject({ type: 'done', stopReason: 'error' });
  });

  it('answers without tools in one action phase', async () => {
    const { ctx, llm, executions } = setup([answer('Hello there.')]);
    const events = await collect(strategy.execute(ctx));
    expect(text(events)).toBe('Hello there.');
    expect(doneOf(events).stopReason).toBe('final_answer');
    expect(llm.calls).toBe(1);
    expect(executions).toHaveLength(0);
    expect(llm.requests[0].tools?.map((t) => t.name)).toEqual(['list_files', 'query_api', 'read_file']);
    expect(llm.requests[0].temperature).toBe(0.3);
    expect(llm.requests[0].maxTokens).toBe(8192);
  });

  it('runs a single call, injects its result as a system message after the system prompt, then answers', async () => {
    const { ctx, llm, executions, trace } = setup([toolTurn('read_file', '{"path":"docs/roadmap.md"}', 'Let me read it. '), answer('The roadmap says ship.')]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toEqual([{ name: 'read_file', args: { path: 'docs/roadmap.md', maxBytes: 65536 } }]);
    expect(text(events)).toBe('Let me read it. \n\nThe roadmap says ship.');
    expect(doneOf(events).stopReason).toBe('final_answer');
    const second = llm.requests[1].messages;
    expect(second[0].role).toBe('system');
    expect(second[1].role).toBe('system');
    expect(second[1].content).toContain('[Tool result #1 — read_file');
    expect(second[1].content).toContain('contents of docs/roadmap.md');
    expect(second[2]).toEqual({ role: 'user', content: 'Summarize docs/roadmap.md' });
    // raw output stays out of the stream unless asked for
    expect(ofType(events, 'tool_progress').every((p) => p.output === undefined)).toBe(true);
    expect(ofType(events, 'tool_calls')).toEqual([{ type: 'tool_calls', calls: [{ id: 'call_0_read_file', name: 'read_file', arguments: '{"path":"docs/roadmap.md"}' }] }]);
    expect(trace.ofType('tool_call')).toHaveLength(1);
    expect(trace.ofType('tool_result')).toHaveLength(1);
  });

  it('numbers phases and cycles: action 1, tool 2 (cycle 1), action 3', async () => {
    const { ctx, trace } = setup([toolTurn('list_files', '{}'), answer('Done.')]);
    const events = await collect(strategy.execute(ctx));
    const phases = ofType(events, 'phase').map((p) => `${p.status}:${p.phase}:${p.phaseIndex}:${p.cycleIndex}${p.reason ? `:${p.reason}` : ''}`);
    expect(phases).toEqual([
      'start:action_phase:1:0',
      'end:action_phase:1:0:tool_call',
      'start:tool_phase:2:1',
      'end:tool_phase:2:1:success',
      'start:action_phase:3:1',
      'end:action_phase:3:1:final_answer',
    ]);
    expect(trace.ofType('orchestration_phase_start').map((t) => t.details)).toEqual([
      { phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, reason: null },
      { phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, reason: null },
      { phase: 'action_phase', phaseIndex: 3, cycleIndex: 1, reason: null },
    ]);
    expect(trace.ofType('orchestration_phase_end')).toHaveLength(3);
  });

  it('runs only the first of two calls in one response and stops reading upstream', async () => {
    const twoCalls = [...callTool(0, 'list_files', '{"path":"docs"}'), ...callTool(1, 'read_file', '{"path":"a.md"}'), ...say('trailing'), finish('tool_calls')];
    const { ctx, llm, executions } = setup([twoCalls, answer('ok')]);
    const events = await collect(strategy.execute(ctx));
    expect(executions.map((e) => e.name)).toEqual(['list_files']);
    expect(ofType(events, 'tool_calls')[0].calls.map((c) => c.name)).toEqual(['list_files']);
    // the first call completed when index 1 started: nothing after that was consumed
    expect(llm.consumed[0]).toBeLessThan(twoCalls.length);
    expect(text(events)).toBe('ok');
    expect(doneOf(events).stopReason).toBe('final_answer');
  });

  it('does not run a call whose arguments parse until a structural boundary passes', async () => {
    // `{"path":"a"}` parses, but the stream fails before index 1 or finish: no boundary, no run
    const cut = setup([[...callTool(0, 'list_files', '{"path":"a"}'), { type: 'error', error: { code: 'network', message: 'reset', retryable: true } }]]);
    const cutEvents = await collect(strategy.execute(cut.ctx));
    expect(cut.executions).toHaveLength(0);
    expect(doneOf(cutEvents).stopReason).toBe('error');

    // the same prefix followed by more argument text: the merged arguments are what runs
    const growing: ScriptedResponse = [
      { type: 'tool-call-delta', index: 0, id: 'c1', name: 'list_files', argumentsFragment: '{"path":"a"}' },
      { type: 'tool-call-delta', index: 0, argumentsFragment: '  ' },
      finish('tool_calls'),
    ];
    const g = setup([growing, answer('ok')]);
    await collect(strategy.execute(g.ctx));
    expect(g.executions).toEqual([{ name: 'list_files', args: { path: 'a', recursive: false } }]);
  });

  it('handles one-character argument fragments', async () => {
    const args = '{"path":"docs/roadmap.md","maxBytes":100}';
    const { ctx, executions } = setup([[...callTool(0, 'read_file', args, 1), finish('tool_calls')], answer('ok')]);
    await collect(strategy.execute(ctx));
    expect(executions).toEqual([{ name: 'read_file', args: { path: 'docs/roadmap.md', maxBytes: 100 } }]);
  });

  it('refuses a DeepSeek-style repeated call with other key order and spacing, and points to the earlier result', async () => {
    const { ctx, llm, executions, trace } = setup([
      toolTurn('read_file', '{"path":"a.md","maxBytes":100}'),
      toolTurn('read_file', '{ "maxBytes" : 100,\n "path": "a.md" }'),
      answer('Here is the summary.'),
    ]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(1);
    const notices = ofType(events, 'notice');
    expect(notices.map((n) => n.code)).toEqual(['duplicate_tool_call']);
    expect(notices[0].message).toContain('Duplicate tool call detected');
    expect(ofType(events, 'tool_progress').map((p) => p.action)).toEqual(['calling', 'completed', 'refused']);
    const third = llm.requests[2].messages.map((m) => m.content).join('\n');
    expect(third).toContain('[Refused duplicate tool call — read_file');
    expect(third).toContain('already ran in phase 2');
    expect(llm.requests[2].tools).toBeDefined(); // a refusal does not consume the cycle budget
    expect(trace.ofType('duplicate_tool_call')).toHaveLength(1);
    expect(trace.ofType('duplicate_tool_call')[0].details).toMatchObject({ name: 'read_file', firstPhaseIndex: 2, strikes: 1 });
    expect(doneOf(events).stopReason).toBe('final_answer');
  });

  it('treats an omitted default as the same call', async () => {
    const { ctx, executions } = setup([toolTurn('list_files', '{}'), toolTurn('list_files', '{"path":".","recursive":false}'), answer('ok')]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(1);
    expect(ofType(events, 'notice').map((n) => n.code)).toEqual(['duplicate_tool_call']);
  });

  it('forces a final answer without tools after maxDuplicateAttempts refusals', async () => {
    const loop = toolTurn('list_files', '{"path":"."}');
    const { ctx, llm, executions, trace } = setup([loop, loop, loop, loop, answer('Final, forced.')]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(1);
    expect(llm.calls).toBe(5);
    const last = llm.requests[4];
    expect(last.tools).toBeUndefined();
    expect(last.toolChoice).toBe('none');
    const codes = ofType(events, 'notice').map((n) => n.code);
    expect(codes).toEqual(['duplicate_tool_call', 'duplicate_tool_call', 'duplicate_tool_call', 'duplicate_limit_reached']);
    expect(ofType(events, 'notice').at(-1)!.message).toContain('Maximum duplicate tool call attempts exceeded');
    // the limit is traced as on the unified route (the ToolCallGuard's notice)
    expect(trace.ofType('orchestration_notice').map((r) => r.details)).toEqual([{ code: 'duplicate_limit_reached', strikes: 3, limit: 3, stopReason: 'duplicate_limit' }]);
    expect(trace.ofType('duplicate_tool_call').map((r) => r.details!.strikes)).toEqual([1, 2, 3]);
    const done = doneOf(events);
    expect(done.stopReason).toBe('duplicate_limit');
    expect(text(events)).toBe('Final, forced.');
  });

  it('executes exactly maxPhaseCycles tools, then forces the final answer', async () => {
    const distinct = (i: number) => toolTurn('read_file', JSON.stringify({ path: `f${i}.md` }));
    const { ctx, llm, executions } = setup([distinct(1), distinct(2), distinct(3), answer('All three read.')]);
    const events = await collect(strategy.execute(ctx));
    expect(executions.map((e) => e.args.path)).toEqual(['f1.md', 'f2.md', 'f3.md']);
    const notice = ofType(events, 'notice');
    expect(notice.map((n) => n.code)).toEqual(['cycle_budget_reached']);
    expect(notice[0].message).toContain('Maximum tool execution cycles (3) reached');
    expect(llm.requests[3].tools).toBeUndefined();
    expect(llm.requests[3].toolChoice).toBe('none');
    expect(doneOf(events).stopReason).toBe('cycle_budget');
  });

  it('ignores tool calls a model still emits when it was asked for the final answer', async () => {
    const distinct = (i: number) => toolTurn('read_file', JSON.stringify({ path: `f${i}.md` }));
    const { ctx, executions } = setup([distinct(1), [...say('Answer. '), ...callTool(0, 'read_file', '{"path":"x"}'), finish('tool_calls')]], {
      budgets: { maxPhaseCycles: 1, maxDuplicateAttempts: 3, maxIterations: 10 },
    });
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(1);
    expect(text(events)).toBe('Answer. ');
    expect(doneOf(events).stopReason).toBe('cycle_budget');
  });

  it('answers with a fallback when the forced final call produces no text', async () => {
    const distinct = (i: number) => toolTurn('read_file', JSON.stringify({ path: `f${i}.md` }));
    const { ctx } = setup([distinct(1), [...callTool(0, 'read_file', '{"path":"again"}'), finish('tool_calls')]], {
      budgets: { maxPhaseCycles: 1, maxDuplicateAttempts: 3, maxIterations: 10 },
    });
    const events = await collect(strategy.execute(ctx));
    expect(text(events)).toMatch(/^I could not finish this within the tool budget/);
    expect(doneOf(events).stopReason).toBe('cycle_budget');
  });

  it('does not run malformed arguments: tells the model once with the schema, then counts repeats as strikes', async () => {
    const bad = [...callTool(0, 'read_file', '{"path": "a.md"'), finish('tool_calls')];
    const { ctx, llm, executions } = setup([bad, bad, answer('Sorry.')], { budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 1, maxIterations: 10 } });
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(0);
    const told = llm.requests[1].messages.map((m) => m.content).join('\n');
    expect(told).toContain('[Tool call not run — read_file]');
    expect(told).toContain('"required":["path"]');
    expect(ofType(events, 'notice').map((n) => n.code)).toEqual(['invalid_tool_arguments', 'invalid_tool_arguments', 'duplicate_tool_call', 'duplicate_limit_reached']);
    expect(doneOf(events).stopReason).toBe('duplicate_limit');
    expect(llm.requests[2].toolChoice).toBe('none');
  });

  it('counts unusable calls under new, invented tool names as strikes, so the turn stays bounded', async () => {
    const bad = (name: string) => [...callTool(0, name, '{"x": '), finish('tool_calls')];
    const { ctx, llm, executions } = setup([bad('tool_a'), bad('tool_b'), bad('tool_c'), bad('tool_d'), answer('Giving up.')]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(0);
    expect(llm.calls).toBe(5);
    expect(doneOf(events).stopReason).toBe('duplicate_limit');
    expect(llm.requests[4].toolChoice).toBe('none');
  });

  it('points a refusal at the numbered result it repeats', async () => {
    const { ctx, llm } = setup([toolTurn('list_files', '{}'), toolTurn('read_file', '{"path":"a"}'), toolTurn('list_files', '{}'), answer('ok')]);
    await collect(strategy.execute(ctx));
    const refusal = llm.requests[3].messages.map((m) => m.content).find((c) => c?.startsWith('[Refused'))!;
    expect(refusal).toContain('"[Tool result #1 …]"');
  });

  it('reports a model failure as an error event followed by one done', async () => {
    const { ctx } = setup([[...say('Partial '), { type: 'error', error: { code: 'server_error', message: 'upstream 500', retryable: true } }]]);
    const events = await collect(strategy.execute(ctx));
    const err = ofType(events, 'error');
    expect(err).toEqual([{ type: 'error', code: 'llm_server_error', message: 'upstream 500', retryable: true }]);
    expect(doneOf(events).stopReason).toBe('error');
    expect(text(events)).toBe('Partial ');
  });

  it('does not run a call cut off by a stream failure', async () => {
    const { ctx, executions } = setup([[...callTool(0, 'list_files', '{"pa'), { type: 'error', error: { code: 'network', message: 'reset', retryable: true } }]]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toHaveLength(0);
    expect(doneOf(events).stopReason).toBe('error');
  });

  it('ends cancelled when the run is aborted mid-stream', async () => {
    const { ctx, abort } = setup([[...say('one ', 'two ', 'three'), finish()]]);
    const events = await collect(strategy.execute(ctx), (e) => {
      if (e.type === 'chunk' && e.content === 'one ') abort.abort();
    });
    expect(doneOf(events).stopReason).toBe('cancelled');
    expect(text(events)).toBe('one ');
  });

  it('never streams or traces an argument its schema marks x-secret', async () => {
    const { ctx, executions, trace } = setup([toolTurn('query_api', '{"q":"users","credential":"hunter2-secret"}'), answer('ok')]);
    const events = await collect(strategy.execute(ctx), undefined);
    expect(executions[0].args).toEqual({ q: 'users', credential: 'hunter2-secret' }); // the tool itself gets it
    const shown = JSON.stringify(events);
    expect(shown).toContain('users');
    expect(shown).not.toContain('hunter2-secret');
    expect(JSON.stringify(trace.records)).not.toContain('hunter2-secret');
  });

  it('uses temperature 0.7 in plan mode', async () => {
    const { ctx, llm } = setup([answer('plan')], { mode: 'plan' });
    await collect(strategy.execute(ctx));
    expect(llm.requests[0].temperature).toBe(0.7);
  });

  it('shows raw tool output only with debugShowToolResults', async () => {
    const { ctx } = setup([toolTurn('list_files', '{}'), answer('ok')], { debugShowToolResults: true });
    const events = await collect(strategy.execute(ctx));
    const completed = ofType(events, 'tool_progress').find((p) => p.action === 'completed')!;
    expect(completed.output).toEqual({ path: '.', entries: ['README.md', 'docs/'] });
  });

  it('pauses right after a tool result with a checkpoint, and resumes without re-running the tool', async () => {
    const first = setup([toolTurn('read_file', '{"path":"a.md"}')]);
    first.requestPause();
    const events = await collect(strategy.execute(first.ctx));
    const paused = events.at(-1)!;
    expect(paused).toEqual({ type: 'paused', resumeFromPhaseIndex: 2 });
    expect(ofType(events, 'done')).toHaveLength(0);
    const checkpoint = ofType(events, 'checkpoint').at(-1)!;
    expect(checkpoint.phaseIndex).toBe(2);
    // a checkpoint survives a JSON round trip (it is stored as jsonb)
    const stored = JSON.parse(JSON.stringify(checkpoint.state));

    const second = setup([toolTurn('read_file', '{"path":"a.md"}'), answer('Resumed answer.')], { resumeFrom: { phaseIndex: 2, state: stored } });
    const rest = await collect(strategy.execute(second.ctx));
    expect(first.executions).toHaveLength(1);
    expect(second.executions).toHaveLength(0); // the repeated call is a refused duplicate
    expect(ofType(rest, 'phase')[0]).toMatchObject({ status: 'start', phase: 'action_phase', phaseIndex: 3, cycleIndex: 1 });
    expect(second.llm.requests[0].messages.map((m) => m.content).join('\n')).toContain('[Tool result #1 — read_file');
    expect(doneOf(rest).stopReason).toBe('final_answer');
  });

  it('shows, keeps and counts nothing of the deciding response after its call', async () => {
    const { ctx, executions, trace } = setup([
      [...say('Reading. '), ...callTool(0, 'read_file', '{"path":"a.md"}'), ...say('AFTER-THE-CALL'), finish('tool_calls')],
      answer('It says hi.'),
    ]);
    const events = await collect(strategy.execute(ctx));
    expect(text(events)).toBe('Reading. \n\nIt says hi.');
    expect(JSON.stringify(events)).not.toContain('AFTER-THE-CALL');
    expect(executions.map((e) => e.name)).toEqual(['read_file']);
    expect(trace.ofType('llm_response')[0].details).toMatchObject({ textChars: 'Reading. '.length, toolCall: { name: 'read_file' } });
    expect(JSON.stringify(trace.records)).not.toContain('AFTER-THE-CALL');
  });

  it('does not run a call sent after finish stop; traces the notice deltas_after_finish', async () => {
    const { ctx, executions, trace } = setup([[...say('All done.'), finish('stop'), ...callTool(0, 'list_files', '{}'), ...say(' late')]]);
    const events = await collect(strategy.execute(ctx));
    expect(executions).toEqual([]);
    expect(ofType(events, 'tool_calls')).toEqual([]);
    expect(text(events)).toBe('All done.');
    expect(doneOf(events).stopReason).toBe('final_answer');
    expect(trace.ofType('orchestration_notice').map((t) => t.details)).toEqual([
      { code: 'deltas_after_finish', phaseIndex: 1, finishReason: 'stop', ignored: { text: 1, reasoning: 0, toolCalls: 2 } },
    ]);
  });

  describe('sources (issue #30: the chat page shows them on both routes)', () => {
    /** A retrieval tool and a web tool that cite what they found, and list_files, which cites nothing. */
    const citingTools = () => {
      const trace = new MemoryTrace();
      const registry = new ToolRegistryService(fakeConfig, trace);
      const tool = (name: string, execute: ToolDefinition['execute']): ToolDefinition => ({
        name,
        description: `${name} tool`,
        parameters: { type: 'object', properties: { query: { type: 'string' }, path: { type: 'string' } } },
        origin: 'builtin',
        isAvailable: () => true,
        execute,
      });
      registry.register(
        tool('rag_query', async () => ({
          output: { confidence: 'medium', metrics: { method: 'fts', candidates: 5, returned: 1 } },
          sources: [{ type: 'rag', title: 'Roadmap', path: 'docs/roadmap.md', snippet: 'Q1: ship', score: 0.9, confidence: 'medium' }],
        })),
      );
      registry.register(tool('web_search', async () => ({ output: { results: 1 }, sources: [{ type: 'web', title: 'Blog', url: 'https://example.com/blog' }] })));
      registry.register(tool('list_files', async () => ({ output: { entries: ['README.md'] } })));
      return new ToolRunnerService(registry, fakeConfig, trace);
    };

    it('sends the sources right after the retrieval tool phase, before the answer streams; none for a turn that retrieved nothing', async () => {
      const { ctx } = setup([toolTurn('list_files', '{}'), toolTurn('rag_query', '{"query":"roadmap"}'), answer('See docs/roadmap.md.')], { tools: citingTools() });
      const events = await collect(strategy.execute(ctx));
      const sources = ofType(events, 'sources');
      expect(sources).toEqual([
        {
          type: 'sources',
          data: [{ type: 'rag', title: 'Roadmap', path: 'docs/roadmap.md', snippet: 'Q1: ship', score: 0.9, confidence: 'medium' }],
          sourceTypes: ['rag'],
          ragCount: 1,
          webCount: 0,
          confidence: 'medium',
          metrics: { method: 'fts', candidates: 5, returned: 1 },
        },
      ]);
      const at = events.indexOf(sources[0]);
      const ragDone = events.findIndex((e) => e.type === 'tool_progress' && e.tool === 'rag_query' && e.action === 'completed');
      const answerChunk = events.findIndex((e) => e.type === 'chunk' && e.content.includes('See docs'));
      expect(ragDone).toBeLessThan(at);
      expect(at).toBeLessThan(answerChunk);

      const plain = setup([toolTurn('list_files', '{}'), answer('Two files.')], { tools: citingTools() });
      expect(ofType(await collect(strategy.execute(plain.ctx)), 'sources')).toEqual([]);
    });

    it('keeps the sources of the legs before a pause: the resumed leg reports them all', async () => {
      const first = setup([toolTurn('rag_query', '{"query":"roadmap"}')], { tools: citingTools() });
      first.requestPause();
      const events = await collect(strategy.execute(first.ctx));
      expect(ofType(events, 'sources')[0].ragCount).toBe(1);
      const stored = JSON.parse(JSON.stringify(ofType(events, 'checkpoint').at(-1)!.state));

      const second = setup([toolTurn('web_search', '{"query":"roadmap"}'), answer('Both agree.')], { tools: citingTools(), resumeFrom: { phaseIndex: 2, state: stored } });
      const rest = ofType(await collect(strategy.execute(second.ctx)), 'sources');
      expect(rest).toHaveLength(1);
      expect(rest[0]).toMatchObject({ sourceTypes: ['rag', 'web'], ragCount: 1, webCount: 1, confidence: 'medium', metrics: { returned: 1 } });
      expect(rest[0].data.map((d) => (d as { title: string }).title)).toEqual(['Roadmap', 'Blog']);
    });
  });

  it('rejects a checkpoint of an unknown schema version', async () => {
    const { ctx } = setup([answer('x')], { resumeFrom: { phaseIndex: 2, state: { schemaVersion: 99 } } });
    await expect(collect(strategy.execute(ctx))).rejects.toThrow(/unsupported checkpoint schemaVersion 99/);
  });
});
