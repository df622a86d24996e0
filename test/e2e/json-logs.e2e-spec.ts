import { Writable } from 'node:stream';
import { Logger, PARAMS_PROVIDER_TOKEN } from 'nestjs-pino';
import { AppConfigService } from '../../src/config/app-config.service';
import { loggingParams } from '../../src/observability/logging';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/** The service's JSON logs, captured from the pino destination: one object a line, the turn's requestId on its lines, no key. */
describe('structured JSON logs', () => {
  const KEY = 'log-test-key-0123456789';
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  let t: TestApp;
  let llm: ReplayServer;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp(
      { LOG_LEVEL: 'debug', API_KEYS: KEY, LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', LLM_API_KEY: `sk-${KEY}` },
      {
        override: (b) => b.overrideProvider(PARAMS_PROVIDER_TOKEN).useFactory({ factory: (c: AppConfigService) => loggingParams(c, sink), inject: [AppConfigService] }),
        setup: (app) => app.useLogger(app.get(Logger)),
      },
    );
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('tags every request line with its id and the turn lines with the requestId; keys never appear', async () => {
    // the model fails once: the adapter's retry warning is logged in the middle of the turn
    llm.enqueue(respond.status(500), respond.turn([{ text: 'Nothing to read.' }]));
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'What do the files say?' }, headers: { authorization: `Bearer ${KEY}` }, timeoutMs: 30_000 });
    const requestId = res.events[0].data.requestId as string;
    expect(res.events.at(-1)!.event).toBe('done');
    // the one route that takes a query-string key (an EventSource reopening the stream)
    await sse(`${t.url}/api/chat/runs/${requestId}/events?access_token=${KEY}`, { timeoutMs: 30_000 });
    // the access line is written when the response finishes, possibly after the client read it
    await waitFor(() => lines.find((l) => l.msg === 'request completed' && l.req?.url?.startsWith('/api/chat/runs/')), { what: "the reopened stream's access log line" });

    const completed = lines.find((l) => l.msg === 'request completed' && l.req?.url?.startsWith('/api/chat/messages'));
    expect(completed).toMatchObject({ level: 30, service: 'orion', requestId, res: { statusCode: 200 } });
    expect(completed!.req.url).toBe('/api/chat/messages');
    const reopened = lines.find((l) => l.msg === 'request completed' && l.req?.url?.startsWith('/api/chat/runs/'));
    expect(reopened!.req.url).toBe(`/api/chat/runs/${requestId}/events?access_token=[redacted]`);
    // every line logged while serving that request carries its id, and those after the turn started its requestId
    const ofRequest = lines.filter((l) => l.req?.id === completed!.req.id);
    const retry = ofRequest.find((l) => l.level === 40 && /retry 1/.test(l.msg));
    expect(retry).toMatchObject({ context: 'OpenAiCompatibleAdapter' });
    expect(ofRequest.every((l) => l.requestId === requestId)).toBe(true);
    expect(JSON.stringify(lines)).not.toContain(KEY);
    expect(lines.every((l) => typeof l.time === 'number' && typeof l.level === 'number')).toBe(true);
  });

  it('answers X-Request-Id (its own, or the caller`s when well-formed)', async () => {
    const own = await fetch(`${t.url}/api/health`);
    expect(own.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const given = await fetch(`${t.url}/api/health`, { headers: { 'X-Request-Id': 'lb-7f3a.1' } });
    expect(given.headers.get('x-request-id')).toBe('lb-7f3a.1');
    const bad = await fetch(`${t.url}/api/health`, { headers: { 'X-Request-Id': 'no spaces <allowed>' } });
    expect(bad.headers.get('x-request-id')).not.toBe('no spaces <allowed>');
  });
});
