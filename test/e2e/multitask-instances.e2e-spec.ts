import { DataSource } from 'typeorm';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, startPeer, type TestApp } from '../support/app';
import { describeOnPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { gatedTool } from '../support/test-tools';
import { sse, type SseEvent, type SseResponse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Issue 33 across instances: two Nest apps on one PostgreSQL database. The database decides a
 * conversation's turns, so messages sent at once to A and B get one winner and the strategy's
 * outcome for the others, and a turn queued on B starts when A's turn ends (A's run closing
 * wakes B through NOTIFY).
 */
describeOnPostgres('two instances share one database (PGlite in memory cannot)', 'one turn at a time per conversation, on two instances', () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp;
  const { gate, tool: gateTool } = gatedTool();

  beforeAll(async () => {
    llm = await ReplayServer.start();
    const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' };
    a = await startApp(env);
    b = await startPeer(a, env);
    for (const t of [a, b]) t.app.get(ToolRegistryService).register(gateTool);
  }, 120_000);
  afterAll(async () => {
    await b.app.close();
    await a.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    gate.arm();
  });

  const send = (t: TestApp, body: Record<string, unknown>, onEvent?: (e: SseEvent) => void) => sse(`${t.url}/api/chat/messages`, { body, timeoutMs: 60_000, onEvent });
  const messages = async (conversationId: string) =>
    (await (await fetch(`${a.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; content: string; requestId: string }>;
  const expectAlternating = (list: Array<{ role: string; requestId: string }>) => {
    expect(list.map((m) => m.role)).toEqual(list.map((_, i) => (i % 2 === 0 ? 'user' : 'assistant')));
    for (let i = 0; i < list.length; i += 2) expect(list[i + 1].requestId).toBe(list[i].requestId);
  };
  const newConversation = async () => {
    llm.enqueue(respond.turn([{ text: 'Opening answer.' }]));
    const res = await send(a, { content: 'Opening' });
    return res.events[0].data.conversationId as string;
  };

  it('reject: 20 sends at once, 10 on A and 10 on B, start exactly one turn; the others are 409 naming it', async () => {
    const conversationId = await newConversation();
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_gate', args: { step: 'one' }, id: 'g1' } }]), respond.turn([{ text: 'Winner answer.' }]));
    const settled: SseResponse[] = [];
    const all = Array.from({ length: 20 }, (_, i) => send(i % 2 ? b : a, { content: `Message ${i}`, conversationId }).then((r) => (settled.push(r), r)));
    await gate.reached;
    await waitFor(() => settled.length === 19, { what: '19 refusals while the winner runs' });
    gate.open();
    const results = await Promise.all(all);
    const won = results.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expect(JSON.parse(r.body)).toMatchObject({ statusCode: 409, error: 'conversation_busy', requestId: won[0].events[0].data.requestId });
    const list = await messages(conversationId);
    expectAlternating(list);
    expect(list).toHaveLength(4);
  });

  it('enqueue: a turn queued on B starts when A\'s turn ends, and its model sees A\'s answer', async () => {
    const conversationId = await newConversation();
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_gate', args: { step: 'one' }, id: 'g1' } }]), respond.turn([{ text: 'A answer.' }]), respond.turn([{ text: 'B answer.' }]));
    const order: string[] = [];
    let aStarted!: (e: SseEvent) => void;
    const aStart = new Promise<SseEvent>((resolve) => (aStarted = resolve));
    const onA = send(a, { content: 'On A', conversationId }, (e) => e.event === 'start' && aStarted(e)).then((r) => (order.push('A done'), r));
    const activeRequestId = (await aStart).data.requestId;
    await gate.reached;
    let queued!: (e: SseEvent) => void;
    const bQueued = new Promise<SseEvent>((resolve) => (queued = resolve));
    const onB = send(b, { content: 'On B', conversationId, options: { multitask: 'enqueue' } }, (e) => {
      if (e.event === 'queued') queued(e);
      if (e.event === 'start') order.push('B start');
    });
    expect((await bQueued).data).toMatchObject({ position: 1, activeRequestId });
    gate.open();
    const [resA, resB] = await Promise.all([onA, onB]);
    expect(order).toEqual(['A done', 'B start']);
    expect(resA.events.at(-1)).toMatchObject({ event: 'done', data: { fullContent: 'A answer.' } });
    expect(resB.events.at(-1)).toMatchObject({ event: 'done', data: { fullContent: 'B answer.' } });
    const seen = (llm.chatRequests.at(-1)!.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'user' || m.role === 'assistant');
    expect(seen.map((m) => m.content)).toEqual(['Opening', 'Opening answer.', 'On A', 'A answer.', 'On B']);
    const list = await messages(conversationId);
    expectAlternating(list);
    expect(list.map((m) => m.content)).toEqual(['Opening', 'Opening answer.', 'On A', 'A answer.', 'On B', 'B answer.']);
  });

  it('enqueue: 20 sends at once on A and B each run once, one after the other', async () => {
    const conversationId = await newConversation();
    llm.setFallback(respond.turn([{ text: 'An answer.' }]));
    const asked = llm.chatRequests.length;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i % 2 ? b : a, { content: `Message ${i}`, conversationId, options: { multitask: 'enqueue' } })));
    for (const r of results) expect(r.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    const list = await messages(conversationId);
    expect(list).toHaveLength(42);
    expectAlternating(list);
    const lengths = llm.chatRequests.slice(asked).map((q) => (q.body.messages as Array<{ role: string }>).filter((m) => m.role === 'user' || m.role === 'assistant').length);
    expect(lengths).toEqual(Array.from({ length: 20 }, (_, i) => 3 + 2 * i));
  }, 120_000);

  it.each(['interrupt', 'rollback'])('%s: 20 sends at once on A and B against a turn streaming on A each get exactly one turn, never two at once', async (strategy) => {
    const conversationId = await newConversation();
    llm.setFallback(respond.turn([{ text: 'An answer.' }]));
    llm.enqueue(respond.turn([{ text: 'Partial ' }, { text: 'answer' }], { faults: { stallAfter: 2 } }));
    let chunked!: () => void;
    const held = new Promise<void>((resolve) => (chunked = resolve));
    // every turn's start and done, in the order they arrive: no turn starts before the previous one's done
    const timeline: string[] = [];
    const track = (e: SseEvent) => void ((e.event === 'start' || e.event === 'done') && e.data.seq !== 0 && timeline.push(`${e.event} ${e.data.requestId}`));
    const first = send(a, { content: 'Held on A', conversationId }, (e) => {
      track(e);
      if (e.event === 'chunk') chunked();
    });
    await held;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i % 2 ? b : a, { content: `${strategy} ${i}`, conversationId, options: { multitask: strategy } }, track)));
    expect((await first).events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'cancelled' } });
    const started = new Set<string>();
    for (const r of results) {
      expect(r.events.filter((e) => e.event === 'start')).toHaveLength(1);
      expect(r.events.filter((e) => e.event === 'done')).toHaveLength(1);
      started.add(r.events.find((e) => e.event === 'start')!.data.requestId as string);
    }
    expect(started.size).toBe(20);
    const runs = (await a.app.get(DataSource).query(`SELECT count(*)::int AS n FROM runs WHERE conversation_id = $1`, [conversationId]))[0].n as number;
    expect(runs).toBe(22);
    const list = await messages(conversationId);
    expectAlternating(list);
    if (strategy === 'interrupt') expect(list).toHaveLength(44);
    expect(timeline).toHaveLength(2 * 21);
    for (let i = 0; i < timeline.length; i += 2) {
      expect(timeline[i]).toMatch(/^start /);
      expect(timeline[i + 1]).toBe(timeline[i].replace('start', 'done'));
    }
  }, 120_000);
});
