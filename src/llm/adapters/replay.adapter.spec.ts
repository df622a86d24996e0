import { estimateUsage } from '../usage-estimate';
import { collectStream } from '../../../test/support/llm-stream-collector';
import type { LlmMessage, LlmRequest, LlmToolSpec } from '../llm-adapter.port';
import { ReplayAdapter } from './replay.adapter';
import { TWO_STAGE_SYSTEM_PROMPT } from '../../orchestration/protocols/two-stage/two-stage.messages';

const LIST_FILES: LlmToolSpec = { name: 'list_files', description: 'Lists files', parameters: { type: 'object' } };
const READ_FILE: LlmToolSpec = { name: 'read_file', description: 'Reads a file', parameters: { type: 'object' } };
const RAG_QUERY: LlmToolSpec = { name: 'rag_query', description: 'Searches the knowledge base', parameters: { type: 'object' } };
const QUESTION = 'What is in the roadmap?';

describe('ReplayAdapter', () => {
  const replay = new ReplayAdapter({ contextWindow: 4096, delayMs: 0 });

  it('says it is a replay', async () => {
    await expect(replay.capabilities()).resolves.toEqual({ provider: 'replay', model: 'replay', toolCalling: true, replay: true, contextWindow: 4096 });
    const got = await collectStream(replay.stream({ messages: [{ role: 'user', content: QUESTION }] }));
    expect(got.text.startsWith('[replay] ')).toBe(true);
    expect(got.text).toContain(`"${QUESTION}"`);
    // no provider counted the tokens: the tokenizer's figures, marked as an estimate
    const request = { messages: [{ role: 'user' as const, content: QUESTION }] };
    expect(got.finishes).toEqual([{ reason: 'stop', rawReason: 'stop', usage: { ...estimateUsage(request, got.text, []), estimated: true } }]);
    expect(got.finishes[0].usage?.promptTokens).toBeGreaterThan(4);
  });

  it('streams word-sized deltas that add up to the text', async () => {
    const got = await collectStream(replay.stream({ messages: [{ role: 'user', content: QUESTION }] }));
    const deltas = got.events.filter((e) => e.type === 'text-delta');
    expect(deltas.length).toBeGreaterThan(10);
    for (const d of deltas) expect(d.text.trim()).not.toContain(' ');
  });

  it('answers a plain question directly, even with every tool offered', async () => {
    const got = await collectStream(replay.stream({ messages: [{ role: 'user', content: 'What is Orion?' }], tools: [LIST_FILES, READ_FILE, RAG_QUERY] }));
    expect(got.toolCalls).toEqual([]);
    expect(got.text.startsWith('[replay] ')).toBe(true);
    expect(got.finishes[0].reason).toBe('stop');
  });

  it('chains list_files → read_file (the file the question names) → an answer quoting it, over tool messages', async () => {
    const first: LlmRequest = { messages: [{ role: 'user', content: 'Summarize docs/roadmap.md' }], tools: [LIST_FILES, READ_FILE, RAG_QUERY] };
    const list = await collectStream(replay.stream(first));
    expect(list.text).toBe('');
    expect(list.toolCalls).toEqual([{ id: 'call_replay_1', name: 'list_files', args: { path: '.', recursive: true } }]);
    expect(list.finishes[0].reason).toBe('tool_calls');

    const listing = { path: '.', recursive: true, entries: [{ path: 'README.md', type: 'file', size: 9 }, { path: 'docs', type: 'directory' }, { path: 'docs/roadmap.md', type: 'file', size: 40 }], truncated: false };
    const second: LlmRequest = {
      ...first,
      messages: [
        ...first.messages,
        { role: 'assistant', content: null, toolCalls: [{ id: 'call_replay_1', name: 'list_files', arguments: '{"path":".","recursive":true}' }] },
        { role: 'tool', content: JSON.stringify(listing), toolCallId: 'call_replay_1', name: 'list_files' },
      ],
    };
    const read = await collectStream(replay.stream(second));
    expect(read.toolCalls).toEqual([{ id: 'call_replay_2', name: 'read_file', args: { path: 'docs/roadmap.md' } }]);

    const content = `# Roadmap\n\nQ1: ship the unified route. ${'x'.repeat(500)}`;
    const answer = await collectStream(
      replay.stream({
        ...second,
        messages: [
          ...second.messages,
          { role: 'assistant', content: null, toolCalls: [{ id: 'call_replay_2', name: 'read_file', arguments: '{"path":"docs/roadmap.md"}' }] },
          // no `name`: the tool is found through its call id
          { role: 'tool', content: JSON.stringify({ path: 'docs/roadmap.md', size: 540, content }), toolCallId: 'call_replay_2' },
        ],
      }),
    );
    expect(answer.toolCalls).toEqual([]);
    expect(answer.text.startsWith('[replay] ')).toBe(true);
    expect(answer.text).toContain('read docs/roadmap.md');
    expect(answer.text).toContain('# Roadmap Q1: ship the unified route.');
    expect(answer.text).not.toContain('x'.repeat(300)); // a quote, not the file
  });

  it('reads the first Markdown or text file listed when the question names none, and reports a failed read', async () => {
    const listing = JSON.stringify({ path: '.', recursive: true, entries: [{ path: 'src', type: 'directory' }, { path: 'src/a.ts', type: 'file' }, { path: 'notes.txt', type: 'file' }, { path: 'z.md', type: 'file' }] });
    const base: LlmMessage[] = [
      { role: 'user', content: 'Which files are in the project?' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'list_files', arguments: '{}' }] },
      { role: 'tool', content: listing, toolCallId: 'c1', name: 'list_files' },
    ];
    const read = await collectStream(replay.stream({ messages: base, tools: [LIST_FILES, READ_FILE] }));
    expect(read.toolCalls.map((c) => c.args)).toEqual([{ path: 'notes.txt' }]);

    const failed = await collectStream(
      replay.stream({
        messages: [
          ...base,
          { role: 'assistant', content: null, toolCalls: [{ id: 'c2', name: 'read_file', arguments: '{"path":"notes.txt"}' }] },
          { role: 'tool', content: '{"is_error":true,"tool":"read_file","outcome":"validation_error","hint":"…","result":{"error":"validation_error","message":"no such file"}}', toolCallId: 'c2', name: 'read_file' },
        ],
        tools: [LIST_FILES, READ_FILE],
      }),
    );
    expect(failed.toolCalls).toEqual([]);
    expect(failed.text).toContain('the tool failed: no such file');
  });

  it('chains over two-stage "[Tool result #N …]" system messages too, one call per step', async () => {
    const q: LlmMessage = { role: 'user', content: 'List the files and show me the readme' };
    const listed: LlmMessage = {
      role: 'system',
      content: '[Tool result #1 — list_files {"path":".","recursive":true} — success]\n{"path":".","recursive":true,"entries":[{"path":"README.md","type":"file"}],"truncated":false}\n[End of tool result #1]',
    };
    const read = await collectStream(replay.stream({ messages: [{ role: 'system', content: 'sys' }, listed, q], tools: [LIST_FILES, READ_FILE] }));
    expect(read.toolCalls).toEqual([{ id: 'call_replay_2', name: 'read_file', args: { path: 'README.md' } }]);
    const readResult: LlmMessage = { role: 'system', content: '[Tool result #2 — read_file {"path":"README.md"} — success]\n{"path":"README.md","content":"# Demo project"}\n[End of tool result #2]' };
    const answer = await collectStream(replay.stream({ messages: [{ role: 'system', content: 'sys' }, listed, readResult, q], tools: [LIST_FILES, READ_FILE] }));
    expect(answer.toolCalls).toEqual([]);
    expect(answer.text).toContain('"# Demo project"');
    // a forced final answer (toolChoice none) after the listing gets text, never a call
    const forced = await collectStream(replay.stream({ messages: [{ role: 'system', content: 'sys' }, listed, q], tools: [LIST_FILES, READ_FILE], toolChoice: 'none' }));
    expect(forced.toolCalls).toEqual([]);
    expect(forced.text).toContain('README.md');
  });

  it('asks rag_query a knowledge question, then answers citing the sources', async () => {
    const question = 'What do the docs say about deployment?';
    const first: LlmRequest = { messages: [{ role: 'user', content: question }], tools: [LIST_FILES, READ_FILE, RAG_QUERY] };
    const call = await collectStream(replay.stream(first));
    expect(call.toolCalls).toEqual([{ id: 'call_replay_1', name: 'rag_query', args: { query: question } }]);

    const output = {
      query: question,
      confidence: 'high',
      results: [
        { type: 'rag', path: 'ops/deploy.md', title: 'Deploy', snippet: 'Deploy with docker compose up.', score: 0.9 },
        { type: 'rag', path: 'ops/rollback.md', title: 'Rollback', snippet: 'Roll back with the previous tag.', score: 0.5 },
      ],
      metrics: { method: 'fts', candidates: 4, returned: 2, latencyMs: 3, topScore: 0.9 },
    };
    const answer = await collectStream(
      replay.stream({
        ...first,
        messages: [
          ...first.messages,
          { role: 'assistant', content: null, toolCalls: [{ id: 'call_replay_1', name: 'rag_query', arguments: JSON.stringify({ query: question }) }] },
          { role: 'tool', content: JSON.stringify(output), toolCallId: 'call_replay_1', name: 'rag_query' },
        ],
      }),
    );
    expect(answer.toolCalls).toEqual([]);
    expect(answer.text.startsWith('[replay] ')).toBe(true);
    expect(answer.text).toContain('2 sources, confidence high');
    expect(answer.text).toContain('[1] ops/deploy.md — "Deploy with docker compose up."');
    expect(answer.text).toContain('[2] ops/rollback.md');
  });

  it('says so when the knowledge base found nothing, and asks nothing without rag_query', async () => {
    const question = 'Search the knowledge base for unicorns';
    const empty = await collectStream(
      replay.stream({
        messages: [
          { role: 'user', content: question },
          { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'rag_query', arguments: '{}' }] },
          { role: 'tool', content: JSON.stringify({ query: question, results: [], confidence: 'none' }), toolCallId: 'c1', name: 'rag_query' },
        ],
        tools: [RAG_QUERY],
      }),
    );
    expect(empty.text).toContain('found nothing relevant');
    const noTool = await collectStream(replay.stream({ messages: [{ role: 'user', content: question }], tools: [LIST_FILES, READ_FILE] }));
    expect(noTool.toolCalls).toEqual([]);
  });

  it('recognises tool results injected as system messages (two-stage)', async () => {
    const got = await collectStream(
      replay.stream({
        messages: [
          { role: 'user', content: QUESTION },
          { role: 'system', content: '[Tool result: list_files] docs/' },
        ],
        tools: [LIST_FILES],
      }),
    );
    expect(got.toolCalls).toEqual([]);
    expect(got.text).toContain('docs/');
  });

  it("never calls a tool with toolChoice 'none', or when the tools a transcript needs are not offered", async () => {
    for (const request of [
      { messages: [{ role: 'user' as const, content: 'List the files' }], tools: [LIST_FILES, READ_FILE], toolChoice: 'none' as const },
      { messages: [{ role: 'user' as const, content: 'List the files' }], tools: [READ_FILE] },
      { messages: [{ role: 'user' as const, content: 'What do the docs say?' }], tools: [RAG_QUERY], toolChoice: 'none' as const },
    ]) {
      const got = await collectStream(replay.stream(request));
      expect(got.toolCalls).toEqual([]);
      expect(got.text.startsWith('[replay] ')).toBe(true);
    }
  });

  it('complete() answers at once; a request that names no tool gets the chat script', async () => {
    const result = await replay.complete({ messages: [{ role: 'user', content: 'Summarize roadmap.md' }], tools: [LIST_FILES, READ_FILE] });
    expect(result).toMatchObject({ content: '', toolCalls: [{ id: 'call_replay_1', name: 'list_files', arguments: '{"path":".","recursive":true}' }], finishReason: 'tool_calls' });
  });

  describe('the tool-only decision (complete) calls the tool the request names', () => {
    const RAG: LlmToolSpec = { name: 'rag_query', description: 'knowledge', parameters: { type: 'object' } };
    const SEARCH: LlmToolSpec = { name: 'web_search', description: 'web', parameters: { type: 'object' } };
    const FETCH: LlmToolSpec = { name: 'fetch_page', description: 'page', parameters: { type: 'object' } };
    const ECHO: LlmToolSpec = { name: 'everything__echo', description: 'echo', parameters: { type: 'object' } };
    const ALL = [LIST_FILES, READ_FILE, RAG, SEARCH, FETCH, ECHO];
    const decide = async (content: string, tools = ALL) =>
      (await replay.complete({ messages: [{ role: 'system', content: 'You are a tool dispatcher.' }, { role: 'user', content }], tools })).toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]);

    it.each([
      ['read docs/roadmap.md', [['read_file', { path: 'docs/roadmap.md' }]]],
      ['Read the README', [['read_file', { path: 'README.md' }]]],
      ['list the files of the project', [['list_files', { path: '.' }]]],
      ['search the knowledge base for install steps\n\nParticipants: pawn_1', [['rag_query', { query: 'search the knowledge base for install steps' }]]],
      ['search the web for orion releases', [['web_search', { query: 'search the web for orion releases' }]]],
      ['summarize https://example.com/a', [['fetch_page', { url: 'https://example.com/a' }]]],
      ['call everything__echo', [['everything__echo', {}]]],
    ])('%s', async (content, calls) => {
      expect(await decide(content)).toEqual(calls);
    });

    it('only picks an exposed tool, and names none when the request names none', async () => {
      expect(await decide('read docs/roadmap.md', [LIST_FILES])).toEqual([]);
      expect(await decide('list the files and read docs/roadmap.md', [LIST_FILES, RAG])).toEqual([['list_files', { path: '.' }]]);
      expect(await decide('colony overview')).toEqual([]);
    });

    it('never applies to a streamed chat step', async () => {
      const got = await collectStream(replay.stream({ messages: [{ role: 'user', content: 'read docs/roadmap.md' }], tools: [LIST_FILES, READ_FILE] }));
      expect(got.toolCalls.map((c) => c.name)).toEqual(['list_files']);
    });
  });

  it('honours abort between words', async () => {
    const slow = new ReplayAdapter({ contextWindow: 4096, delayMs: 20 });
    const controller = new AbortController();
    const got = await collectStream(slow.stream({ messages: [{ role: 'user', content: QUESTION }] }, controller.signal), (e, i) => {
      if (i === 1) controller.abort();
    });
    expect(got.events.length).toBeLessThan(6);
    expect(got.errors.map((e) => e.code)).toEqual(['aborted']);
    expect(got.finishes).toEqual([]);
  });
});

describe('ReplayAdapter under the two-stage system prompt', () => {
  it('calls a tool first even though the system prompt mentions "[Tool result #N …]"', async () => {
    const adapter = new ReplayAdapter({ contextWindow: 32768, delayMs: 0 });
    const reply = await adapter.complete({
      messages: [{ role: 'system', content: TWO_STAGE_SYSTEM_PROMPT }, { role: 'user', content: 'Summarize roadmap.md' }],
      tools: [
        { name: 'list_files', description: 'list', parameters: { type: 'object' } },
        { name: 'read_file', description: 'read', parameters: { type: 'object' } },
      ],
    });
    expect(reply.toolCalls.map((c) => c.name)).toEqual(['list_files']);
  });
});
