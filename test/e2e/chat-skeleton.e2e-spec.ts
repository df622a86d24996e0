import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { checkEnvelope, sse } from '../support/sse-client';
import { onPostgres } from '../support/db';

/** Issue #2's walking skeleton over real HTTP and SSE, on the embedded replay model. */
describe('POST /api/chat/messages (walking skeleton, replay model)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('streams start, chunks and one done with the envelope, and stores both messages', async () => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'What is Orion?' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    checkEnvelope(res.events);
    const types = res.events.map((e) => e.event);
    expect(types[0]).toBe('start');
    expect(types.filter((x) => x === 'done')).toHaveLength(1);
    expect(types.at(-1)).toBe('done');
    expect(types).toContain('chunk');
    const start = res.events[0].data;
    expect(start).toMatchObject({ protocol: 'unified', projectId: 'default', seq: 1 });
    const text = res.events.filter((e) => e.event === 'chunk').map((e) => e.data.content).join('');
    expect(text.toLowerCase()).toContain('replay');
    const done = res.events.at(-1)!.data;
    expect(done).toMatchObject({ stopReason: 'final_answer', phase: 'complete', fullContent: text });
    expect(typeof done.messageId).toBe('string');

    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${start.conversationId}/messages`)).json();
    expect(msgs.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(msgs[0]).toMatchObject({ content: 'What is Orion?', status: 'complete', requestId: start.requestId });
    expect(msgs[1]).toMatchObject({ id: done.messageId, content: text, status: 'complete', requestId: start.requestId });

    const run = await (await fetch(`${t.url}/api/chat/runs/${start.requestId}`)).json();
    expect(run).toMatchObject({ status: 'completed', protocol: 'unified', stopReason: 'final_answer', lastSeq: done.seq });

    const list = await (await fetch(`${t.url}/api/chat/conversations?projectId=default`)).json();
    expect(list.map((c: { id: string }) => c.id)).toContain(start.conversationId);
  });

  it('continues a conversation and sends its history to the model', async () => {
    const first = await sse(`${t.url}/api/chat/messages`, { body: { content: 'First question', projectId: 'p1' } });
    const conversationId = first.events[0].data.conversationId as string;
    const second = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Second question', projectId: 'p1', conversationId } });
    expect(second.events[0].data.conversationId).toBe(conversationId);
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json();
    expect(msgs.map((m: { role: string; content: string }) => `${m.role}:${m.content.slice(0, 15)}`)).toEqual([
      'user:First question',
      expect.stringMatching(/^assistant:/),
      'user:Second question',
      expect.stringMatching(/^assistant:/),
    ]);
  });

  it.each([
    [{}, /^content is required \(a string\)$/],
    [{ content: '' }, /content must not be empty/],
    [{ content: 'x'.repeat(32001) }, /content must be shorter than or equal to 32000 characters/, 'content of 32,001 characters'],
    [{ content: 'hi', projectId: 'bad id!' }, /projectId must be/],
    [{ content: 'hi', mode: 'yolo' }, /mode must be "act" or "plan"/],
    [{ content: 'hi', conversationId: 'nope' }, /conversationId must be a UUID/],
    [{ content: 'hi', options: { maxPhaseCycles: 0 } }, /maxPhaseCycles must not be less than 1/],
    [{ content: 'hi', options: { maxIterations: 21 } }, /maxIterations must not be greater than 20/],
    [{ content: 'hi', options: { debugShowToolResults: 'yes' } }, /debugShowToolResults must be a boolean/],
    [{ content: 'hi', extra: 1 }, /^extra is not allowed \(unknown field; accepted: projectId, conversationId, content, webhookUrl, mode, options\)$/],
  ] as Array<[Record<string, unknown>, RegExp, string?]>)('answers a bad body with 400 before any stream, storing nothing (%#)', async (body, message) => {
    const before = await (await fetch(`${t.url}/api/chat/conversations?projectId=default`)).json();
    const res = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    const json = await res.json();
    expect(json.statusCode).toBe(400);
    expect([json.message].flat().join('; ')).toMatch(message);
    const after = await (await fetch(`${t.url}/api/chat/conversations?projectId=default`)).json();
    expect(after.length).toBe(before.length);
  });

  it('answers malformed JSON with 400', async () => {
    const res = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content": ' });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toMatch(/not valid JSON/);
  });

  it('answers an unknown conversation with 404 and stores nothing', async () => {
    const res = await fetch(`${t.url}/api/chat/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'hi', conversationId: '00000000-0000-4000-8000-000000000000' }),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ statusCode: 404, error: 'conversation_not_found' });
    const msgs = await fetch(`${t.url}/api/chat/conversations/00000000-0000-4000-8000-000000000000/messages`);
    expect(msgs.status).toBe(404);
  });

  it('keeps the two-stage route behind TWO_STAGE_ENABLED', async () => {
    const res = await fetch(`${t.url}/api/chat/messages_two_stage`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'hi' }) });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ statusCode: 404, error: 'two_stage_disabled' });
  });

  it('serves health, capabilities and the OpenAPI document', async () => {
    const health = await (await fetch(`${t.url}/api/health`)).json();
    expect(health).toMatchObject({ status: 'ok', db: { status: 'up' }, llm: { provider: 'replay', replay: true } });
    const caps = await (await fetch(`${t.url}/api/config/capabilities`)).json();
    expect(caps).toMatchObject({ provider: 'replay', toolCalling: true, orchestratorEnabled: true, orchestratorAvailable: true, twoStageEnabled: false, replay: true });
    const doc = await (await fetch(`${t.url}/docs-json`)).json();
    for (const path of [
      '/api/chat/messages',
      '/api/chat/messages_two_stage',
      '/api/chat/conversations',
      '/api/chat/conversations/{id}/messages',
      '/api/chat/conversations/{id}/settings',
      '/api/chat/runs/{requestId}',
      '/api/chat/runs/{requestId}/cancel',
      '/api/chat/runs/{requestId}/pause',
      '/api/health',
      '/api/config/capabilities',
      '/api/trace',
      '/api/tools',
    ]) {
      expect(doc.paths[path]).toBeDefined();
    }
    expect(doc.components.schemas.SendMessageDto.properties.content).toMatchObject({ maxLength: 32000 });
    const ui = await fetch(`${t.url}/docs`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('swagger');
  });

  it('traces the turn without secrets', async () => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'trace me' } });
    const requestId = res.events[0].data.requestId as string;
    const trace = await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json();
    const types = trace.map((x: { type: string }) => x.type);
    expect(types[0]).toBe('run_started');
    expect(types).toEqual(expect.arrayContaining(['llm_request', 'llm_response', 'run_completed']));
    expect((await fetch(`${t.url}/api/trace?limit=0`)).status).toBe(400);
  });
});

describe('persistence across restarts', () => {
  it('finds the conversation after the server restarts', async () => {
    const env = onPostgres() ? {} : { DATABASE_URL: '', DATA_DIR: mkdtempSync(join(tmpdir(), 'orion-data-')) };
    const first = await startApp(env);
    const shared = onPostgres() ? { databaseUrl: first.databaseUrl } : {};
    let conversationId: string;
    try {
      const res = await sse(`${first.url}/api/chat/messages`, { body: { content: 'Remember me' } });
      conversationId = res.events[0].data.conversationId as string;
    } finally {
      await first.app.close();
    }
    const second = await startApp(env, shared);
    try {
      const msgs = await (await fetch(`${second.url}/api/chat/conversations/${conversationId}/messages`)).json();
      expect(msgs.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
      expect(msgs[0].content).toBe('Remember me');
    } finally {
      await second.close();
      await first.close().catch(() => undefined);
    }
  }, 60_000);
});

describe('hostile bodies', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(['/api/chat/messages', '/api/orchestration/execute', '/api/knowledge/ingest'])('refuses JSON nested 5,000 deep on %s with a 400, not a 500', async (path) => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const res = await fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"content":"x","userInput":"x","mode":"Classic","zzz":${deep}}` });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toMatch(/nested deeper than 64 levels/);
  });
});

describe('the replay model on every chat route', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ TWO_STAGE_ENABLED: 'true', LLM_PROVIDER: 'replay' });
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    mkdirSync(join(t.workspace, 'default', 'docs'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\n\nQ1: ship the replay demo.\n');
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(['messages', 'messages_two_stage'])('chains list_files → read_file on %s and answers from the file, saying it is a replay', async (route) => {
    const res = await sse(`${t.url}/api/chat/${route}`, { body: { content: 'Summarize docs/roadmap.md' }, timeoutMs: 30_000 });
    checkEnvelope(res.events);
    const tools = res.events.filter((e) => e.event === 'tool_progress' && e.data.action === 'completed').map((e) => e.data.tool);
    expect(tools).toEqual(['list_files', 'read_file']);
    const text = res.events.filter((e) => e.event === 'chunk').map((e) => e.data.content).join('');
    expect(text).toContain('[replay]');
    expect(text).toContain('ship the replay demo');
    expect(res.events.at(-1)!.data.stopReason).toBe('final_answer');
  });
});
