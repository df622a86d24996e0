import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import type { RepeatPolicy, ToolDefinition, ToolExecuteResult } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';

/** A job-status tool whose answers come from a script; the last answer repeats forever. */
class StatusTool implements ToolDefinition {
  readonly description = 'Status of the build job';
  readonly parameters = { type: 'object', properties: { job: { type: 'string' } }, required: ['job'] };
  readonly origin = 'builtin' as const;
  script: string[] = [];
  runs = 0;
  constructor(
    readonly name: string,
    readonly repeat: RepeatPolicy,
  ) {}
  isAvailable(): boolean {
    return true;
  }
  async execute(): Promise<ToolExecuteResult> {
    const state = this.script[Math.min(this.runs, this.script.length - 1)];
    this.runs += 1;
    return { output: { job: 'build-7', state } };
  }
}

/** Issue 13, item 1 over HTTP on both routes: a `rerun` tool can be polled, a loop is still stopped. */
describe.each([
  ['unified', '/api/chat/messages', (content: string) => ({ content })],
  ['two-stage', '/api/chat/messages_two_stage', (content: string) => ({ content, options: {} })],
])('repeat policy on the %s route', (_protocol, route, body) => {
  let llm: ReplayServer;
  let t: TestApp;
  const poll = new StatusTool('build_status', 'rerun');
  const strict = new StatusTool('strict_status', 'refuse');

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', MAX_DUPLICATE_ATTEMPTS: '2', MAX_ITERATIONS: '10', MAX_PHASE_CYCLES_PER_TURN: '10', TWO_STAGE_ENABLED: 'true' });
    const registry = t.app.get(ToolRegistryService);
    registry.register(poll);
    registry.register(strict);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    poll.runs = 0;
    strict.runs = 0;
  });

  const send = (content: string) => sse(`${t.url}${route}`, { body: body(content), timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');
  const call = (name: string, id: string) => respond.turn([{ toolCall: { name, args: { job: 'build-7' }, id } }]);
  const duplicates = async (events: SseEvent[]) => {
    const requestId = events[0].data.requestId as string;
    const trace = (await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json()) as Array<{ type: string; details: Record<string, unknown> }>;
    return trace.filter((x) => x.type === 'duplicate_tool_call').map((x) => x.details);
  };

  it('a rerun tool answering pending, pending, done completes the turn with three executions', async () => {
    poll.script = ['pending', 'pending', 'done'];
    llm.enqueue(call('build_status', 'c1'), call('build_status', 'c2'), call('build_status', 'c3'), respond.turn([{ text: 'The build is done.' }]));
    const { events } = await send('Wait for build-7 and tell me when it is done.');
    expect(poll.runs).toBe(3);
    expect(of(events, 'tool_progress').filter((e) => e.data.action === 'completed')).toHaveLength(3);
    expect(of(events, 'tool_progress').filter((e) => e.data.action === 'refused')).toHaveLength(0);
    expect(events.at(-1)!.data.stopReason).toBe('final_answer');
    expect(textOf(events)).toContain('The build is done.');
    // the second run repeated the first result (one strike, below the limit of 2), the third changed it
    expect((await duplicates(events)).map((d) => [d.policy, d.sameResult])).toEqual([
      ['rerun', true],
      ['rerun', false],
    ]);
  });

  it('a rerun tool answering pending forever is stopped by the strike limit with a real final answer', async () => {
    poll.script = ['pending'];
    llm.enqueue(...Array.from({ length: 3 }, (_, i) => call('build_status', `c${i}`)), respond.turn([{ text: 'Still pending; check back later.' }]));
    const { events } = await send('Wait for build-7.');
    expect(poll.runs).toBe(3);
    expect(events.at(-1)!.data.stopReason).toBe('duplicate_limit');
    expect(of(events, 'notice').map((e) => e.data.code)).toEqual(['duplicate_tool_call', 'duplicate_tool_call', 'duplicate_limit_reached']);
    expect(textOf(events)).toContain('Still pending; check back later.');
    const last = llm.chatRequests.at(-1)!.body;
    expect(last.tools ?? []).toEqual([]);
    expect(llm.chatRequests).toHaveLength(4);
  });

  it('a refuse tool behaves as before: the repeat is not run', async () => {
    strict.script = ['pending', 'done'];
    llm.enqueue(call('strict_status', 'c1'), call('strict_status', 'c2'), respond.turn([{ text: 'It is pending.' }]));
    const { events } = await send('Status of build-7?');
    expect(strict.runs).toBe(1);
    expect(of(events, 'tool_progress').filter((e) => e.data.action === 'refused')).toHaveLength(1);
    expect(of(events, 'notice').map((e) => e.data.code)).toContain('duplicate_tool_call');
    expect((await duplicates(events)).map((d) => [d.policy, d.sameResult])).toEqual([['refuse', null]]);
    expect(events.at(-1)!.data.stopReason).toBe('final_answer');
  });
});
