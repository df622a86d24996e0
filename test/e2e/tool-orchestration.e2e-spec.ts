import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { fixtureServer, waitFor, waitForTool } from '../support/mcp-test-kit';

/** Issue #6 over real HTTP: Classic and NarrowTopK against the OpenAI-compatible adapter. */
describe('POST /api/orchestration/execute', () => {
  let llm: ReplayServer;
  let t: TestApp;

  const start = async (env: Record<string, string> = {}) => {
    const app = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', ...env });
    const project = join(app.workspace, 'default');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'README.md'), '# Colony\nPawns: 3\n');
    return app;
  };

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await start();
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const post = async (body: unknown, url = t.url) => {
    const res = await fetch(`${url}/api/orchestration/execute`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  };

  it('Classic: exposes every available tool, one non-streaming decision, executes it', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]));
    const { status, body } = await post({ userInput: 'colony overview', participantIds: ['pawn_1'], mode: 'Classic' });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      mode: 'Classic',
      decidedCalls: [{ toolName: 'read_file', args: { path: 'README.md' } }],
      isSuccess: true,
      error: null,
    });
    expect(body.exposedTools).toEqual(expect.arrayContaining(['list_files', 'read_file']));
    expect(body.executions).toHaveLength(1);
    expect(body.executions[0]).toMatchObject({ toolName: 'read_file', outcome: 'success', args: { path: 'README.md', maxBytes: 65536 } });
    expect(JSON.stringify(body.executions[0].resultObject)).toContain('Pawns: 3');
    expect(typeof body.totalLatencyMs).toBe('number');
    // what the model was asked: the fixed prompt, the input alone, all tools, not streamed
    const req = llm.chatRequests[0];
    expect(req.body.stream).not.toBe(true);
    expect(req.body.messages).toHaveLength(2);
    expect(req.body.messages[0].content).toContain('Respond ONLY with function calls');
    expect(req.body.messages[1].content).toBe('colony overview\n\nParticipants: pawn_1');
    expect(req.body.tools.map((x: { function: { name: string } }) => x.function.name)).toEqual(body.exposedTools);
    expect(req.headers['x-client-request-id']).toBe(body.requestId);
  });

  it('Classic: a model that calls nothing gives no_tool_calls', async () => {
    llm.enqueue(respond.turn([{ text: 'I would rather chat.' }]));
    const { body } = await post({ userInput: 'hello', mode: 'Classic' });
    expect(body).toMatchObject({ mode: 'Classic', decidedCalls: [], executions: [], isSuccess: false, error: 'no_tool_calls' });
  });

  it('Classic: wrong-typed arguments are a validation_error and invalid_args, nothing runs', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 42 } } }]));
    const { body } = await post({ userInput: 'read it', mode: 'Classic' });
    expect(body).toMatchObject({ isSuccess: false, error: 'invalid_args' });
    expect(body.executions[0].outcome).toBe('validation_error');
    expect(JSON.stringify(body.executions[0].resultObject)).toMatch(/path/);
  });

  it('a tool that reports an error is an exception-class outcome; the orchestration itself completed (isSuccess, no error)', async () => {
    const { createServer } = await import('node:http');
    const page = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<html><title>Gone</title><body>Not here</body></html>');
    });
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', () => r()));
    const host = `127.0.0.1:${(page.address() as { port: number }).port}`;
    const app = await start({ FETCH_ALLOW_HOSTS: host });
    try {
      llm.enqueue(respond.turn([{ toolCall: { name: 'fetch_page', args: { url: `http://${host}/missing` } } }]));
      const { body } = await post({ userInput: 'fetch it', mode: 'Classic' }, app.url);
      expect(body.executions[0]).toMatchObject({ toolName: 'fetch_page', outcome: 'exception', isError: true });
      expect(body).toMatchObject({ isSuccess: true, error: null });
    } finally {
      await app.close();
      page.close();
    }
  });

  it('an MCP tool that returns an isError result (a real stdio server) is an exception-class outcome, not a success', async () => {
    const fx = fixtureServer('fx');
    const dir = join(t.workspace, '..', `mcp-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const config = join(dir, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { fx: { command: fx.command, args: fx.args, env: {} } } }));
    const app = await start({ MCP_CONFIG: config });
    try {
      // the server's tools are listed shortly after start (until then the call is refused as a tool that is not offered)
      await waitForTool(app.url, 'fx__fail');
      llm.enqueue(respond.turn([{ toolCall: { name: 'fx__fail', args: {} } }]));
      // fx__fail is not annotated read-only, so by default it waits for a person (issue 32): approved here
      const body = (await post({ userInput: 'call fail', mode: 'Classic', approvedCalls: [{ tool: 'fx__fail', arguments: {} }] }, app.url)).body as { executions: Array<Record<string, unknown>>; isSuccess: boolean; error: unknown };
      expect(body.executions[0]).toMatchObject({ toolName: 'fx__fail', outcome: 'exception', isError: true });
      expect(JSON.stringify(body.executions[0].resultObject)).toContain('something went wrong on purpose');
      expect(body).toMatchObject({ isSuccess: true, error: null });
    } finally {
      await app.close();
    }
  });

  it('a missing file is an exception-class outcome with a clear message, not invalid_args', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'no-such-file.md' } } }]));
    const { body } = await post({ userInput: 'read no-such-file.md', mode: 'Classic' });
    expect(body.executions[0]).toMatchObject({ toolName: 'read_file', outcome: 'exception', isError: true });
    expect(body.executions[0].resultObject.message).toMatch(/not found: "no-such-file\.md" does not exist/);
    expect(body).toMatchObject({ isSuccess: true, error: null });
  });

  it('refuses arguments that are JSON null instead of running the tool with {}', async () => {
    llm.enqueue(respond.json({ id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'list_files', arguments: null } }, { id: 'c2', type: 'function', function: { arguments: '{}' } }] } }] }));
    const { body } = await post({ userInput: 'x', mode: 'Classic', options: { maxCalls: 2 } });
    expect(body.error).toBe('invalid_args');
    expect(body.executions.map((e: { outcome: string }) => e.outcome)).toEqual(['validation_error', 'validation_error']);
    expect(body.executions[0].resultObject.message).toMatch(/got null/);
    expect(body.executions[1].resultObject.message).toMatch(/no tool name/);
  });

  it('cuts decided calls to maxCalls and runs them in order', async () => {
    const calls = [
      { toolCall: { name: 'list_files', args: {} } },
      { toolCall: { name: 'read_file', args: { path: 'README.md' } } },
      { toolCall: { name: 'list_files', args: { recursive: true } } },
    ];
    llm.enqueue(respond.turn(calls), respond.turn(calls));
    const one = await post({ userInput: 'look around', mode: 'Classic' });
    expect(one.body.decidedCalls).toHaveLength(1);
    const two = await post({ userInput: 'look around', mode: 'Classic', options: { maxCalls: 2 } });
    expect(two.body.executions.map((e: { toolName: string }) => e.toolName)).toEqual(['list_files', 'read_file']);
    expect(two.body.isSuccess).toBe(true);
  });

  it('uses the Chinese prompt for locale zh', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]));
    await post({ userInput: '殖民地概况', participantIds: ['pawn_1'], mode: 'Classic', options: { locale: 'zh-CN' } });
    const msgs = llm.chatRequests[0].body.messages;
    expect(msgs[0].content).toContain('只能以函数调用作答');
    expect(msgs[1].content).toBe('殖民地概况\n\n参与者: pawn_1');
  });

  it('turns a model failure into llm_error', async () => {
    llm.enqueue(respond.status(401, { message: 'bad key' }));
    const { status, body } = await post({ userInput: 'x', mode: 'Classic' });
    expect(status).toBe(200);
    expect(body).toMatchObject({ isSuccess: false, error: 'llm_error' });
  });

  it('NarrowTopK: shows the model only the retrieved candidates', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]));
    const { body } = await post({ userInput: 'read the contents of the file README.md', mode: 'NarrowTopK', options: { narrowTopK: 1 } });
    expect(body).toMatchObject({ mode: 'NarrowTopK', exposedTools: ['read_file'], isSuccess: true, error: null });
    expect(body.candidates[0]).toMatchObject({ name: 'read_file' });
    expect(llm.chatRequests[0].body.tools.map((x: { function: { name: string } }) => x.function.name)).toEqual(['read_file']);
  });

  it('NarrowTopK: never runs a tool it did not expose', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]));
    const { body } = await post({ userInput: 'read the contents of the file README.md', mode: 'NarrowTopK', options: { narrowTopK: 1 } });
    expect(body.exposedTools).toEqual(['read_file']);
    expect(body.executions[0]).toMatchObject({ toolName: 'list_files', outcome: 'validation_error' });
    expect(body.error).toBe('invalid_args');
  });

  it('NarrowTopK: a threshold that leaves no candidate ends with no_candidates, without a model call', async () => {
    // one task whose words span two tools, so the best one explains only part of it (a request
    // split into two tasks would score each task on its own, and each can be fully explained)
    const input = 'list the folder recursively for web search results';
    const [top] = await (await fetch(`${t.url}/api/orchestration/tool-index/search?q=${encodeURIComponent(input)}&k=1`)).json();
    expect(top.score).toBeLessThan(0.99);
    const { body } = await post({ userInput: input, mode: 'NarrowTopK', options: { minScoreThreshold: Math.min(1, top.score + 0.01) } });
    expect(body).toMatchObject({ mode: 'NarrowTopK', exposedTools: [], decidedCalls: [], isSuccess: false, error: 'no_candidates' });
    expect(llm.chatRequests).toHaveLength(0);
  });

  it('NarrowTopK: a nonsense request that shares one word with a tool is refused by the default threshold (no_candidates, no model call)', async () => {
    // "page" is in two tools' names; the other words are no tool's, so the match is weak
    const input = 'zorblax quantum page flibbertigibbet';
    const search = async (minScore: number) => (await fetch(`${t.url}/api/orchestration/tool-index/search?q=${encodeURIComponent(input)}&k=5&minScore=${minScore}`)).json();
    const all = await search(0);
    expect(all.map((h: { name: string }) => h.name)).toContain('fetch_page');
    expect(all[0].score).toBeLessThan(0.23);
    expect(await search(0.23)).toEqual([]);
    // no options: minScoreThreshold is ORCHESTRATION_MIN_SCORE's default
    const { body } = await post({ userInput: input, mode: 'NarrowTopK' });
    expect(body).toMatchObject({ mode: 'NarrowTopK', exposedTools: [], decidedCalls: [], isSuccess: false, error: 'no_candidates', candidates: [] });
    const explicit = await post({ userInput: input, mode: 'NarrowTopK', options: { minScoreThreshold: 0.3 } });
    expect(explicit.body).toMatchObject({ error: 'no_candidates', exposedTools: [] });
    expect(llm.chatRequests).toHaveLength(0);
  });

  it('NarrowTopK: the candidates carry the scores the search route shows (absolute, not relative to the best)', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]));
    const input = 'read the contents of the file README.md';
    const { body } = await post({ userInput: input, mode: 'NarrowTopK', options: { narrowTopK: 3, minScoreThreshold: 0 } });
    const shown = await (await fetch(`${t.url}/api/orchestration/tool-index/search?q=${encodeURIComponent(input)}&k=3`)).json();
    expect(body.candidates).toEqual(shown.map((h: { name: string; score: number }) => ({ name: h.name, score: h.score })));
    expect(body.candidates[0]).toMatchObject({ name: 'read_file' });
    expect(body.candidates[0].score).toBeGreaterThan(0.23);
    expect(body.candidates[0].score).toBeLessThan(1);
  });

  it('ORCHESTRATION_DEFAULT_MODE, _TOP_K and _MAX_CALLS fill what a request leaves out; what it names wins', async () => {
    const app = await start({ ORCHESTRATION_DEFAULT_MODE: 'NarrowTopK', ORCHESTRATION_TOP_K: '1', ORCHESTRATION_MAX_CALLS: '2' });
    try {
      const calls = [{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }, { toolCall: { name: 'read_file', args: { path: 'README.md', maxBytes: 10 } } }, { toolCall: { name: 'read_file', args: { path: 'README.md', maxBytes: 20 } } }];
      llm.enqueue(respond.turn(calls), respond.turn(calls));
      const byDefault = await post({ userInput: 'read the contents of the file README.md' }, app.url);
      expect(byDefault.status).toBe(200);
      expect(byDefault.body).toMatchObject({ mode: 'NarrowTopK', exposedTools: ['read_file'], isSuccess: true });
      expect(byDefault.body.executions).toHaveLength(2);
      const named = await post({ userInput: 'read the contents of the file README.md', mode: 'Classic', options: { maxCalls: 1 } }, app.url);
      expect(named.body).toMatchObject({ mode: 'Classic', isSuccess: true });
      expect(named.body.exposedTools.length).toBeGreaterThan(1);
      expect(named.body.executions).toHaveLength(1);
      // the stream route resolves the same way
      llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]));
      const res = await sse(`${app.url}/api/orchestration/execute/stream`, { body: { userInput: 'read the contents of the file README.md' } });
      expect(res.events.at(-1)!.data).toMatchObject({ mode: 'NarrowTopK', exposedTools: ['read_file'] });
    } finally {
      await app.close();
    }
    // without the setting a missing mode is still a 400, on both routes, before any model call
    const missing = await fetch(`${t.url}/api/orchestration/execute/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userInput: 'x' }) });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(await missing.json())).toMatch(/mode must be one of: Classic, NarrowTopK \(required while ORCHESTRATION_DEFAULT_MODE is not set\)/);
  });

  it('NarrowTopK: a disabled index is narrow_topk_unavailable and never falls back to Classic', async () => {
    const off = await start({ TOOL_INDEX_ENABLED: 'false' });
    try {
      const { body } = await post({ userInput: 'read README.md', mode: 'NarrowTopK' }, off.url);
      expect(body).toMatchObject({ mode: 'NarrowTopK', isSuccess: false, error: 'narrow_topk_unavailable', exposedTools: [] });
      expect(llm.chatRequests).toHaveLength(0);
    } finally {
      await off.close();
    }
  });

  it.each([
    [{ userInput: 'x' }, /mode must be one of: Classic, NarrowTopK \(required while ORCHESTRATION_DEFAULT_MODE is not set\)/],
    [{ userInput: '', mode: 'Classic' }, /userInput must not be empty/],
    [{ userInput: 'x', mode: 'Classic', options: { maxCalls: 0 } }, /maxCalls must not be less than 1/],
    [{ userInput: 'x', mode: 'NarrowTopK', options: { minScoreThreshold: 2 } }, /minScoreThreshold must not be greater than 1/],
    [{ userInput: 'x', mode: 'Classic', options: { locale: 'fr' } }, /locale must be en or zh/],
    [{ userInput: 'x', mode: 'Classic', participantIds: 'pawn_1' }, /participantIds must be an array/],
  ])('answers a bad body with 400 (%#)', async (body, message) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect([res.body.message].flat().join('; ')).toMatch(message);
    expect(llm.chatRequests).toHaveLength(0);
  });

  it.each(['/api/orchestration/execute', '/api/orchestration/execute/stream'])('answers an unknown mode on %s with 400 unknown_mode naming the modes, before any model call', async (route) => {
    const res = await fetch(`${t.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userInput: 'x', mode: 'Hybrid' }) });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = await res.json();
    expect(body).toMatchObject({ statusCode: 400, error: 'unknown_mode' });
    expect(body.message).toEqual([expect.stringMatching(/Classic, NarrowTopK.*Hybrid/)]);
    expect(llm.chatRequests).toHaveLength(0);
  });

  it('streams the four stages, then one result', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]));
    const res = await sse(`${t.url}/api/orchestration/execute/stream`, { body: { userInput: 'what files are there', mode: 'Classic' } });
    expect(res.status).toBe(200);
    const stages = res.events.filter((e) => e.event === 'progress').map((e) => `${e.data.stage}${e.data.index !== undefined ? `#${e.data.index}` : ''}`);
    expect(stages).toEqual(['PrepareTools', 'LLMDecision', 'ExecuteTool#0', 'Finished']);
    const results = res.events.filter((e) => e.event === 'result');
    expect(results).toHaveLength(1);
    expect(res.events.at(-1)!.event).toBe('result');
    expect(results[0].data).toMatchObject({ mode: 'Classic', isSuccess: true, executions: [{ toolName: 'list_files', outcome: 'success' }] });
    const bad = await fetch(`${t.url}/api/orchestration/execute/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userInput: 'x', mode: 'Nope' }) });
    expect(bad.status).toBe(400);
  });

  // the plain route and the stream take their caller's signal from the same decorator (ClientSignal)
  for (const route of ['execute', 'execute/stream']) {
    it(`a caller that hangs up on ${route} while the model decides: the model request is aborted, not left to run`, async () => {
      llm.enqueue(respond.hang());
      const caller = new AbortController();
      const body = JSON.stringify({ userInput: 'what files are there', mode: 'Classic' });
      const call = fetch(`${t.url}/api/orchestration/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: caller.signal })
        .then((res) => res.text())
        .catch((err: Error) => err.name);
      await waitFor(() => llm.chatRequests.length === 1, 10_000, 'the model request');
      caller.abort();
      expect(await call).toBe('AbortError');
      await waitFor(() => llm.chatRequests[0].closedEarlyAt !== undefined, 10_000, 'the model request to be aborted');
    });
  }

  it('GET /api/orchestration/tool-index/search shows the candidates with scores', async () => {
    const hits = await (await fetch(`${t.url}/api/orchestration/tool-index/search?q=${encodeURIComponent('read a file')}&k=2`)).json();
    expect(hits[0]).toMatchObject({ name: 'read_file', origin: 'builtin' });
    expect(hits[0].score).toBeGreaterThan(0);
    expect(hits[0].score).toBeLessThanOrEqual(1);
    expect(hits.length).toBeLessThanOrEqual(2);
    expect((await fetch(`${t.url}/api/orchestration/tool-index/search?q=x&k=0`)).status).toBe(400);
    expect((await fetch(`${t.url}/api/orchestration/tool-index/search`)).status).toBe(400);
  });
});
