import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond, type RecordedRequest } from '../support/replay-server';
import type { ScriptStep } from '../support/llm-wire';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';

const SENTENCE = 'The build cache is stale, so run npm ci again first. ';
const GOOD_START = 'Here is what the install guide says about this project.\n\n';
const RECOVERED = 'Run npm ci, then npm start; clear the build cache if it is stale.';
const PLAN = 'Let me look at the docs folder first.';
const ANSWER = 'The docs folder holds install.md and usage.md.';
/** What the model's own stream is cut into: deltas of a few characters, as real models send them. */
const deltas = (text: string, size = 7): ScriptStep[] => Array.from({ length: Math.ceil(text.length / size) }, (_, i) => ({ text: text.slice(i * size, (i + 1) * size) }));
const count = (text: string, part: string) => text.split(part).length - 1;

/** A request that offers no tools: the tool-free call after a loop (or a budget). */
const toolFree = (req: RecordedRequest) => !(req.body?.tools ?? []).length;
const told = (req: RecordedRequest, what: string) => JSON.stringify(req.body?.messages ?? []).includes(what);

/** Issue #41, done-when: loops of every shape are stopped on both chat routes with a real answer, and real work is not. */
describe.each([
  ['unified', '/api/chat/messages'],
  ['two-stage', '/api/chat/messages_two_stage'],
])('loops on the %s route', (protocol, route) => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // generous loop budgets, so only the loop rules can stop a turn
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', MAX_ITERATIONS: '10', MAX_PHASE_CYCLES_PER_TURN: '10' });
    const docs = join(t.workspace, 'default', 'docs');
    mkdirSync(docs, { recursive: true });
    writeFileSync(join(docs, 'install.md'), 'Run npm ci, then npm start.');
    writeFileSync(join(docs, 'usage.md'), 'Open http://localhost:3000.');
    for (let i = 1; i <= 7; i++) writeFileSync(join(docs, `part-${i}.md`), `Part ${i} of the guide (marker-${i}).`);
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const send = (content: string) => sse(`${t.url}${route}`, { body: { content }, timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');
  const stored = async (events: SseEvent[]) => {
    const msgs = (await (await fetch(`${t.url}/api/chat/conversations/${events[0].data.conversationId}/messages`)).json()) as Array<{ role: string; content: string; stopReason?: string }>;
    return msgs.find((m) => m.role === 'assistant')!;
  };
  const traceOf = async (events: SseEvent[]) =>
    (await (await fetch(`${t.url}/api/trace?requestId=${events[0].data.requestId}`)).json()) as Array<{ type: string; details: Record<string, unknown> }>;
  const ended = async (events: SseEvent[], stopReason: string) => {
    expect(events[0].data.protocol).toBe(protocol);
    checkEnvelope(events);
    expect(of(events, 'done')).toHaveLength(1);
    expect(events.at(-1)!.event).toBe('done');
    expect(events.at(-1)!.data.stopReason).toBe(stopReason);
    // what the client got is exactly what is stored
    const text = textOf(events);
    expect(events.at(-1)!.data.fullContent).toBe(text);
    expect(await stored(events)).toMatchObject({ content: text, stopReason });
    return text;
  };

  it('a model repeating one sentence 150 times: at most 10 repeats reach the client, then one tool-free call answers (content_loop)', async () => {
    llm.setFallback(respond.byRequest((req) => (told(req, 'repeating') ? respond.turn(deltas(RECOVERED)) : respond.turn(deltas(SENTENCE.repeat(150))))));
    const { status, events } = await send('Why does the build fail?');
    expect(status).toBe(200);
    const text = await ended(events, 'content_loop');
    const repeats = count(text, SENTENCE.trim());
    expect(repeats).toBeGreaterThanOrEqual(2);
    expect(repeats).toBeLessThanOrEqual(10);
    expect(text.endsWith(RECOVERED)).toBe(true);
    // the looping call and one tool-free call, told why
    expect(llm.chatRequests).toHaveLength(2);
    expect(toolFree(llm.chatRequests[1])).toBe(true);
    expect(of(events, 'notice').map((e) => e.data.code)).toEqual(['content_loop']);
    const loops = (await traceOf(events)).filter((r) => r.type === 'loop_detected');
    expect(loops).toHaveLength(1);
    // `shown`: the copies the client got; `repeats`: the copies the model wrote before it was stopped
    expect(loops[0].details).toMatchObject({ kind: 'content', in: 'text', period: SENTENCE.length, shown: repeats });
    expect(loops[0].details.repeats as number).toBeGreaterThan(repeats);
    expect(typeof loops[0].details.atChar).toBe('number');
  });

  it('after a tool call the answer starts well, then loops: the text before the loop is kept and the recovery follows it', async () => {
    llm.setFallback(
      respond.byRequest((req) => {
        if (told(req, 'repeating')) return respond.turn(deltas(RECOVERED));
        if (toolFree(req) || told(req, 'install.md')) return respond.turn(deltas(GOOD_START + SENTENCE.repeat(120)));
        return respond.turn([{ text: PLAN }, { toolCall: { name: 'list_files', args: { path: 'docs' }, id: 'ls_1' } }]);
      }),
    );
    const { events } = await send('How do I install this?');
    const text = await ended(events, 'content_loop');
    expect(text.startsWith(PLAN)).toBe(true);
    expect(text).toContain(GOOD_START.trim());
    expect(count(text, SENTENCE.trim())).toBeLessThanOrEqual(10);
    expect(text.endsWith(RECOVERED)).toBe(true);
    expect(of(events, 'tool_progress').filter((e) => e.data.action === 'completed')).toHaveLength(1);
    // the recovery call read what the user had already seen (the good start), once
    const recovery = JSON.stringify(llm.chatRequests.at(-1)!.body.messages);
    expect(recovery).toContain('Here is what the install guide says');
    expect(count(recovery, SENTENCE.trim())).toBeLessThanOrEqual(2);
  });

  it('a recovery that loops too ends the turn with what was said, after two model calls', async () => {
    llm.setFallback(respond.turn(deltas(SENTENCE.repeat(150))));
    const { events } = await send('Why does the build fail?');
    const text = await ended(events, 'content_loop');
    expect(llm.chatRequests).toHaveLength(2);
    // 8 copies, then one of the tool-free call's own loop: what it said before its loop
    expect(count(text, SENTENCE.trim().slice(0, -1))).toBeLessThanOrEqual(10);
    expect(of(events, 'notice').map((e) => e.data.code)).toEqual(['content_loop', 'content_loop']);
  });

  it('a loop in the reasoning is stopped too (nothing of it streams) and the answer is written once', async () => {
    llm.setFallback(respond.byRequest((req) => (told(req, 'repeating') ? respond.turn(deltas(RECOVERED)) : respond.turn([...Array.from({ length: 200 }, () => ({ reasoning: 'Wait, let me check the cache again. ' }))]))));
    const { events } = await send('Why does the build fail?');
    const text = await ended(events, 'content_loop');
    expect(text).toBe(RECOVERED);
    const loops = (await traceOf(events)).filter((r) => r.type === 'loop_detected');
    expect(loops.map((r) => r.details.in)).toEqual(['reasoning']);
  });

  it('a model that lists one folder under rephrased paths is stopped within 6 model calls with a real answer (no_progress)', async () => {
    const paths = ['docs', 'docs/', './docs', 'docs/.', './docs/', 'docs//', 'docs/./', '././docs'];
    llm.setFallback(
      respond.byRequest((req) => {
        if (toolFree(req)) return respond.turn(deltas(ANSWER));
        const n = llm.chatRequests.length;
        const call = { toolCall: { name: 'list_files', args: { path: paths[(n - 1) % paths.length] }, id: `ls_${n}` } };
        return respond.turn(n === 1 ? [{ text: PLAN }, call] : [call]);
      }),
    );
    const { events } = await send('What is in the docs folder?');
    const text = await ended(events, 'no_progress');
    expect(llm.chatRequests.length).toBeLessThanOrEqual(6);
    expect(toolFree(llm.chatRequests.at(-1)!)).toBe(true);
    expect(text.endsWith(ANSWER)).toBe(true);
    const codes = of(events, 'notice').map((e) => e.data.code);
    expect(codes.filter((c) => c === 'no_progress')).toHaveLength(3);
    expect(codes.at(-1)).toBe('duplicate_limit_reached');
    // every listing ran (a rephrased call is not a repeat), and the model was told it learned nothing new
    expect(of(events, 'tool_progress').filter((e) => e.data.action === 'completed')).toHaveLength(4);
    expect(count(JSON.stringify(llm.chatRequests.at(-1)!.body.messages), 'no new information')).toBeGreaterThanOrEqual(3);
    const loops = (await traceOf(events)).filter((r) => r.type === 'loop_detected');
    expect(loops.map((r) => r.details.kind)).toEqual(['no_progress', 'no_progress', 'no_progress']);
  });

  it.each([
    ['ten identical log lines', 'The log says:\n' + '2024-05-01 12:00:00 WARN connection reset by peer, retrying\n'.repeat(10) + 'After that it recovered.'],
    ['a checklist of one item, thirty times', 'Checklist:\n' + '- Run the migration check and confirm the result.\n'.repeat(30) + 'Done.'],
    ['a stack trace', 'RangeError: Maximum call stack size exceeded\n' + '    at walk (/app/src/tree.js:42:11)\n'.repeat(12) + 'The walk never ends: add a depth limit.'],
    ['a sentence the user asked for ten times', 'All work and no play makes Jack a dull boy. '.repeat(10)],
  ])('controls: a legitimate repetition streams whole as the answer (%s)', async (_what, answer) => {
    llm.setFallback(respond.turn(deltas(answer, 6)));
    const { events } = await send('Show me.');
    const text = await ended(events, 'final_answer');
    expect(text).toBe(answer);
    expect(llm.chatRequests).toHaveLength(1);
    expect(of(events, 'notice')).toEqual([]);
  });

  it('controls: seven reads of seven different files all run, and a 30-step numbered list streams whole', async () => {
    const list = Array.from({ length: 30 }, (_, i) => `${i + 1}. Step ${i + 1}: read part ${(i % 7) + 1} again and check it.\n`).join('');
    llm.setFallback(
      respond.byRequest((req) => {
        const n = llm.chatRequests.length;
        if (toolFree(req) || n > 7) return respond.turn(deltas(list));
        return respond.turn([{ toolCall: { name: 'read_file', args: { path: `docs/part-${n}.md` }, id: `rf_${n}` } }]);
      }),
    );
    const { events } = await send('Read every part of the guide and give me the steps.');
    const text = await ended(events, 'final_answer');
    expect(text).toContain(list.trim());
    expect(of(events, 'tool_progress').filter((e) => e.data.action === 'completed')).toHaveLength(7);
    expect(of(events, 'notice')).toEqual([]);
  });
});
