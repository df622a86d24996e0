import OpenAI from 'openai';
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond, type RecordedRequest } from '../support/replay-server';
import type { ScriptStep } from '../support/llm-wire';

const SENTENCE = 'The build cache is stale, so run npm ci again first. ';
const RECOVERED = 'Run npm ci, then npm start.';
const deltas = (text: string, size = 7): ScriptStep[] => Array.from({ length: Math.ceil(text.length / size) }, (_, i) => ({ text: text.slice(i * size, (i + 1) * size) }));
const count = (text: string, part: string) => text.split(part).length - 1;
/** The model loops until it is told its answer started repeating. */
const looping = respond.byRequest((req: RecordedRequest) => (JSON.stringify(req.body?.messages ?? []).includes('repeating') ? respond.turn(deltas(RECOVERED)) : respond.turn(deltas(SENTENCE.repeat(150)))));

/** Issue #41: the content-loop rule on the other edges of the same runs, driven by their own ecosystems' clients. */
describe('content loops on /v1/chat/completions and /api/chat/ui', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let openai: OpenAI;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
    openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', maxRetries: 0 });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset().setFallback(looping));

  it.each(['orion-unified', 'orion-two-stage'])('%s, streamed and not: finish_reason stays OpenAI\'s stop, orion.stop_reason says content_loop, the content is cut', async (model) => {
    const whole = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Why does the build fail?' }] });
    const content = whole.choices[0].message.content ?? '';
    expect(whole.choices[0].finish_reason).toBe('stop');
    expect((whole as unknown as { orion: { stop_reason: string } }).orion.stop_reason).toBe('content_loop');
    expect(count(content, SENTENCE.trim())).toBeLessThanOrEqual(10);
    expect(content.endsWith(RECOVERED)).toBe(true);

    const stream = await openai.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'Why does the build fail?' }] });
    let text = '';
    let finish: string | null = null;
    let stopReason: string | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      stopReason = (chunk as unknown as { orion?: { stop_reason: string } }).orion?.stop_reason ?? stopReason;
    }
    expect(finish).toBe('stop');
    expect(stopReason).toBe('content_loop');
    expect(text).toBe(content);
  });

  it('the AI SDK reader gets the cut answer and stopReason content_loop in the message metadata', async () => {
    const transport = new DefaultChatTransport({ api: `${t.url}/api/chat/ui` });
    const messages: UIMessage[] = [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Why does the build fail?' }] }];
    const stream = await transport.sendMessages({ chatId: 'chat-loop', messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    let last: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream, terminateOnError: true })) last = m;
    const text = last!.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
    expect(count(text, SENTENCE.trim())).toBeLessThanOrEqual(10);
    expect(text.endsWith(RECOVERED)).toBe(true);
    expect((last!.metadata as Record<string, unknown>).stopReason).toBe('content_loop');
  });
});
