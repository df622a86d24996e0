import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond, type RecordedRequest } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';

const PREAMBLE = 'Let me read the install guide.';
const ANSWER = 'Install with npm ci, then npm start.';
const FILE_TEXT = 'Run npm ci, then npm start. (install-guide-marker)';
/** The same call each time, written differently: keys reordered, spacing and line breaks changed. */
const SPELLINGS = [
  '{"path":"guides/install.md","maxBytes":4000}',
  '{ "maxBytes" : 4000, "path" : "guides/install.md" }',
  '{"maxBytes":4000,\n  "path":"guides/install.md"}',
];

/**
 * A looping model, as the user reported it: whenever tools are offered it calls read_file on
 * the same file again (only its first response says something first); offered none, it answers.
 * It never stops by itself, so the number of requests it gets is what the route allowed.
 */
function loopingModel(llm: ReplayServer) {
  return respond.byRequest((req: RecordedRequest) => {
    const n = llm.chatRequests.length; // this request is already recorded
    if (!(req.body?.tools ?? []).length) return respond.turn([{ text: ANSWER }]);
    const call = { toolCall: { name: 'read_file', args: SPELLINGS[(n - 1) % SPELLINGS.length], id: `loop_${n}` } };
    return respond.turn(n === 1 ? [{ text: PREAMBLE }, call] : [call]);
  });
}

/** Issue #29, deliverable 2: one loop rule on both routes — a repeated call is a strike, the limit stops the loop. */
describe.each([
  ['unified', '/api/chat/messages'],
  ['two-stage', '/api/chat/messages_two_stage'],
])('a model repeating one call on the %s route', (protocol, route) => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // generous loop budgets, so only the duplicate limit (MAX_DUPLICATE_ATTEMPTS, 3) can stop the loop
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', MAX_ITERATIONS: '10', MAX_PHASE_CYCLES_PER_TURN: '10' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), FILE_TEXT);
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset().setFallback(loopingModel(llm)));

  const send = (options: Record<string, unknown> = {}) => sse(`${t.url}${route}`, { body: { content: 'How do I install this project?', options }, timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');
  const traceOf = async (requestId: string) =>
    (await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json()) as Array<{ type: string; details: Record<string, unknown> }>;
  const occurrences = (text: string, part: string) => text.split(part).length - 1;

  it.each([
    ['MAX_DUPLICATE_ATTEMPTS (3)', {}, 3],
    ['options.maxDuplicateAttempts (2)', { maxDuplicateAttempts: 2 }, 2],
  ])('stops at the duplicate limit of %s: one run, limit refusals, one tool-free answer', async (_label, options, limit) => {
    const { status, events } = await send(options);
    expect(status).toBe(200);
    checkEnvelope(events);
    expect(events[0].data.protocol).toBe(protocol);

    // 1 call that runs + `limit` refused repeats + 1 final call offered no tools
    expect(llm.chatRequests.length).toBeLessThanOrEqual(limit + 2);
    expect(llm.chatRequests).toHaveLength(limit + 2);
    expect(llm.chatRequests.at(-1)!.body.tools ?? []).toEqual([]);
    expect(of(events, 'done')).toHaveLength(1);
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.stopReason).toBe('duplicate_limit');

    // an answer beyond the preamble, stored as streamed
    const text = textOf(events);
    expect(text.startsWith(PREAMBLE)).toBe(true);
    expect(text.slice(PREAMBLE.length).trim()).toBe(ANSWER);
    expect(done.data.fullContent).toBe(text);
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${events[0].data.conversationId}/messages`)).json();
    expect(msgs.find((m: { role: string }) => m.role === 'assistant')).toMatchObject({ content: text, stopReason: 'duplicate_limit' });

    // the file was read once; every repeat was refused, one strike each, and the limit said so
    const progress = of(events, 'tool_progress').map((e) => e.data.action);
    expect(progress.filter((a) => a === 'completed')).toHaveLength(1);
    expect(progress.filter((a) => a === 'refused')).toHaveLength(limit);
    expect(of(events, 'notice').map((e) => e.data.code)).toEqual([...Array(limit).fill('duplicate_tool_call'), 'duplicate_limit_reached']);

    // the model got the file's text once: a refusal does not send the earlier result again
    const lastPrompt = JSON.stringify(llm.chatRequests.at(-1)!.body.messages);
    expect(occurrences(lastPrompt, 'install-guide-marker')).toBe(1);
    expect(occurrences(lastPrompt, 'NOT run again')).toBe(limit);

    // traced the same way on both routes
    const trace = await traceOf(events[0].data.requestId as string);
    const dups = trace.filter((x) => x.type === 'duplicate_tool_call').map((x) => x.details);
    expect(dups.map((d) => [d.name, d.policy, d.sameResult, d.strikes, d.limit])).toEqual(
      Array.from({ length: limit }, (_, i) => ['read_file', 'refuse', null, i + 1, limit]),
    );
    for (const d of dups) expect(typeof d.firstPhaseIndex).toBe('number');
    expect(trace.filter((x) => x.type === 'orchestration_notice').map((x) => x.details)).toEqual([{ code: 'duplicate_limit_reached', strikes: limit, limit, stopReason: 'duplicate_limit' }]);
    expect(trace.filter((x) => x.type === 'llm_request').map((x) => x.details.forced ?? null)).toEqual([...Array(limit + 1).fill(null), 'duplicate_limit']);
    expect(trace.filter((x) => x.type === 'tool_call')).toHaveLength(1);
  });
});
