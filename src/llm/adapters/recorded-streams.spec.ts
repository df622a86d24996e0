import { collectStream, type CollectedStream } from '../../../test/support/llm-stream-collector';
import { listRecordings, loadRecording, type Recording } from '../../../test/support/llm-recordings';
import { ReplayServer, respond } from '../../../test/support/replay-server';
import type { LlmAdapter, LlmErrorCode } from '../llm-adapter.port';
import { OllamaAdapter } from './ollama.adapter';
import { OpenAiCompatibleAdapter } from './openai-compatible.adapter';

/**
 * Every recording in test/fixtures/llm-streams, served over real HTTP by the replay server and read through the
 * adapter of its wire protocol (OpenAI-compatible for SSE, Ollama for NDJSON).
 */

interface Expectation {
  text: string | { startsWith: string; length: number };
  reasoning: string | { startsWith: string; length: number };
  toolCalls: Array<{ id?: string; name: string; args: Record<string, unknown> }>;
  finish?: { reason: string; rawReason?: string; usage: [number, number, number] };
  error?: { code: LlmErrorCode; messageContains: string; status?: number };
}

const SF = { location: 'San Francisco' };

/** What each recording says, read by a human from the files (README of the fixtures). */
const EXPECTED: Record<string, Expectation> = {
  'azure-gpt5nano-prompt-filter-first-chunk': { text: 'Capital of Denmark.', reasoning: '', toolCalls: [], finish: { reason: 'stop', usage: [15, 78, 93] } },
  'cerebras-glm47-text-then-repeated-tool-call': {
    text: '{"result": "2026"}',
    reasoning: { startsWith: 'The nonUsefulTool returned the number 2026', length: 461 },
    toolCalls: [{ id: 'e0ecf32e0', name: 'nonUsefulTool', args: {} }],
    finish: { reason: 'tool_calls', usage: [433, 122, 555] },
  },
  'deepseek-reasoner-reasoning-then-tool-call': {
    text: '',
    reasoning: { startsWith: 'The user is asking for the weather in San Francisco.', length: 191 },
    toolCalls: [{ id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', name: 'weather', args: SF }],
    finish: { reason: 'tool_calls', usage: [339, 83, 422] },
  },
  'deepseek-reasoner-text': {
    text: 'The word "strawberry" contains three "r"s.',
    reasoning: { startsWith: 'We need to count the number of the letter "r"', length: 606 },
    toolCalls: [],
    finish: { reason: 'stop', usage: [18, 219, 237] },
  },
  'deepseek-reasoner-text-2025-05': {
    text: { startsWith: 'The sky appears blue due to a phenomenon called **Rayleigh scattering**', length: 2355 },
    reasoning: { startsWith: 'Okay, the user is asking why the sky is blue.', length: 1216 },
    toolCalls: [],
    finish: { reason: 'stop', usage: [10, 811, 821] },
  },
  'groq-gptoss-tool-use-failed-error': {
    text: '',
    reasoning: { startsWith: 'We need to call the tool with invalid parameters first', length: 412 },
    toolCalls: [],
    error: { code: 'provider_error', messageContains: 'tool_use_failed', status: 400 },
  },
  'groq-llama33-tool-call-whole': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'tk85n1k4m', name: 'weather', args: {} }],
    finish: { reason: 'tool_calls', usage: [210, 15, 225] },
  },
  'mistral-small-tool-call-no-index': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'gSIMJiOkT', name: 'weather', args: SF }],
    finish: { reason: 'tool_calls', usage: [124, 22, 146] },
  },
  'ollama-llama32-native-tool-call': {
    text: '',
    reasoning: '',
    toolCalls: [{ name: 'get_weather', args: { city: 'Tokyo' } }],
    finish: { reason: 'tool_calls', rawReason: 'stop', usage: [169, 15, 184] },
  },
  'openai-gpt4o-finish-length': { text: '{"', reasoning: '', toolCalls: [], finish: { reason: 'length', usage: [79, 1, 80] } },
  'openai-gpt4o-long-args-many-deltas': {
    text: '',
    reasoning: '',
    toolCalls: [
      {
        id: 'call_CCGIWaMeYWmxOQ91orkmTvzn',
        name: 'final_result',
        args: {
          answers: [
            { label: 'Capital', answer: 'The capital of Mexico is Mexico City.' },
            { label: 'Weather', answer: 'The weather in Mexico City is currently sunny.' },
            { label: 'Product Name', answer: 'The product name is Pydantic AI.' },
          ],
        },
      },
    ],
    finish: { reason: 'tool_calls', usage: [448, 62, 510] },
  },
  'openai-gpt4o-parallel-tool-calls': {
    text: '',
    reasoning: '',
    toolCalls: [
      { id: 'call_JMW1whyEaYG438VE1OIflxA2', name: 'GetWeatherArgs', args: { city: 'Edinburgh', country: 'GB', units: 'c' } },
      { id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou', name: 'get_stock_price', args: { ticker: 'AAPL', exchange: 'NASDAQ' } },
    ],
    finish: { reason: 'tool_calls', usage: [149, 60, 209] },
  },
  'openai-gpt4o-single-tool-call': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'call_4XzlGBLtUe9dy3GVNV4jhq7h', name: 'get_weather', args: { city: 'New York City' } }],
    finish: { reason: 'tool_calls', usage: [44, 16, 60] },
  },
  'openai-gpt4o-text-stop-usage': {
    text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
    reasoning: '',
    toolCalls: [],
    finish: { reason: 'stop', usage: [14, 30, 44] },
  },
  'openrouter-minimax-inline-error': {
    text: '',
    reasoning: 'We need to respond to a greeting. The user',
    toolCalls: [],
    error: { code: 'provider_error', messageContains: 'Token limit reached', status: 400 },
  },
  'qwen3max-dashscope-tool-call': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'call_eee11723464a4b9eb8cee71d', name: 'weather', args: SF }],
    finish: { reason: 'tool_calls', usage: [295, 22, 317] },
  },
  'vllm-llama31-tool-call-usage-every-chunk': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'chatcmpl-tool-b3b307239370432d9910d4b79b4dbbaa', name: 'searchGoogle', args: { query: 'latest news on ai' } }],
    finish: { reason: 'tool_calls', usage: [226, 20, 246] },
  },
  'xai-grok3mini-reasoning-tool-call': {
    text: '',
    reasoning: { startsWith: 'First, the user is asking about the weather in San Francisco', length: 1069 },
    toolCalls: [{ id: 'call_79382389', name: 'weather', args: SF }],
    finish: { reason: 'tool_calls', usage: [307, 26, 560] },
  },
};

/**
 * A deliberately naive second reading of a recording (no index resolution beyond "index or
 * position", no error handling subtleties), so a recording added to the folder later is
 * checked too, even before someone writes its row in EXPECTED.
 */
function naiveReading(rec: Recording) {
  let text = '';
  let reasoning = '';
  let error = false;
  const calls: Array<{ name: string; args: string }> = [];
  for (const p of rec.payloads as Array<Record<string, any>>) {
    if (typeof p !== 'object' || p === null) continue;
    if (p.error) error = true;
    if (rec.format === 'ndjson') {
      text += p.message?.content ?? '';
      reasoning += p.message?.thinking ?? '';
      for (const tc of p.message?.tool_calls ?? []) calls.push({ name: tc.function.name, args: JSON.stringify(tc.function.arguments) });
      continue;
    }
    for (const ch of p.choices ?? []) {
      const d = ch.delta ?? {};
      text += typeof d.content === 'string' ? d.content : '';
      reasoning += d.reasoning_content || d.reasoning || '';
      for (const tc of d.tool_calls ?? []) {
        const i = typeof tc.index === 'number' ? tc.index : calls.length;
        calls[i] ??= { name: '', args: '' };
        calls[i].name ||= tc.function?.name ?? '';
        calls[i].args += tc.function?.arguments ?? '';
      }
    }
  }
  return { text, reasoning, error, calls: calls.map((c) => ({ name: c.name, args: JSON.parse(c.args || '{}') })) };
}

function expectText(actual: string, expected: Expectation['text']): void {
  if (typeof expected === 'string') expect(actual).toBe(expected);
  else {
    expect(actual.startsWith(expected.startsWith)).toBe(true);
    expect(actual).toHaveLength(expected.length);
  }
}

describe('recorded provider streams through the adapters, over HTTP', () => {
  let server: ReplayServer;
  let openai: LlmAdapter;
  let ollama: LlmAdapter;
  const results = new Map<string, CollectedStream>();

  beforeAll(async () => {
    server = await ReplayServer.start();
    const options = { model: 'recorded', timeoutMs: 10_000, idleTimeoutMs: 5_000, contextWindow: 8192 };
    openai = new OpenAiCompatibleAdapter({ ...options, baseUrl: server.openAiBaseUrl });
    ollama = new OllamaAdapter({ ...options, baseUrl: server.ollamaBaseUrl });
  });
  afterAll(() => server.close());

  async function read(name: string): Promise<CollectedStream> {
    const cached = results.get(name);
    if (cached) return cached;
    const rec = loadRecording(name);
    server.enqueue(respond.recording(name));
    const adapter = rec.format === 'sse' ? openai : ollama;
    const result = await collectStream(adapter.stream({ messages: [{ role: 'user', content: 'replay' }] }));
    results.set(name, result);
    return result;
  }

  it('covers every recording in the folder', () => {
    expect(listRecordings().length).toBeGreaterThanOrEqual(18);
    for (const name of Object.keys(EXPECTED)) expect(listRecordings()).toContain(name);
  });

  describe.each(listRecordings())('%s', (name) => {
    it('matches what the recording says', async () => {
      const got = await read(name);
      const want = EXPECTED[name];
      if (!want) return; // a recording without a row is still checked by the naive reading below
      expectText(got.text, want.text);
      expectText(got.reasoning, want.reasoning);
      expect(got.toolCalls.map((c) => ({ ...(want.toolCalls.some((w) => w.id) ? { id: c.id } : {}), name: c.name, args: c.args }))).toEqual(
        want.toolCalls,
      );
      if (want.finish) {
        const [promptTokens, completionTokens, totalTokens] = want.finish.usage;
        expect(got.finishes).toEqual([
          { reason: want.finish.reason, rawReason: want.finish.rawReason ?? want.finish.reason, usage: expect.objectContaining({ promptTokens, completionTokens, totalTokens }) },
        ]);
        // the details a recording carries (OpenAI's cached and reasoning tokens) are read, never invented
        const wire = JSON.stringify(loadRecording(name));
        if (!wire.includes('reasoning_tokens')) expect(got.finishes[0].usage).not.toHaveProperty('reasoningTokens');
        if (!wire.includes('cached_tokens')) expect(got.finishes[0].usage).not.toHaveProperty('cachedTokens');
        expect(got.errors).toEqual([]);
        expect(got.last).toBe('finish');
      }
      if (want.error) {
        expect(got.finishes).toEqual([]);
        expect(got.errors).toHaveLength(1);
        expect(got.errors[0].code).toBe(want.error.code);
        expect(got.errors[0].message).toContain(want.error.messageContains);
        if (want.error.status) expect(got.errors[0].status).toBe(want.error.status);
        expect(got.last).toBe('error');
      }
    });

    it('agrees with a naive reading of the file, and ends with exactly one finish or one error', async () => {
      const got = await read(name);
      const naive = naiveReading(loadRecording(name));
      expect(got.text).toBe(naive.text);
      expect(got.reasoning).toBe(naive.reasoning);
      if (!naive.error) expect(got.toolCalls.map((c) => ({ name: c.name, args: c.args }))).toEqual(naive.calls);
      expect(got.finishes.length + got.errors.length).toBe(1);
      expect(got.events.filter((e) => e.type === 'text-delta' && e.text === '')).toEqual([]);
      // reasoning never leaks into the answer
      if (naive.reasoning) expect(got.text).not.toContain(naive.reasoning.slice(0, 40));
    });
  });
});
