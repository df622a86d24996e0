import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { openAiChunksFromSteps } from '../support/llm-wire';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

const KEY = 'burst-key';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

interface Answer {
  status: number;
  retryAfter: string | null;
  body: string;
}

/** Reads each answer's body at once: an unread body holds its connection. */
async function get(url: string): Promise<Answer> {
  const r = await fetch(url, { headers: auth });
  return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() };
}

/** A model that answers every request at once, except those `waits` picks: they answer when `open()` is called. */
async function gatedModel(waits: (rawBody: string) => boolean): Promise<{ llm: ReplayServer; open: () => void }> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const llm = await ReplayServer.start();
  llm.setFallback(
    respond.handler(async (req, res) => {
      if (waits(req.rawBody)) await gate;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const c of openAiChunksFromSteps([{ text: 'an answer' }])) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end('data: [DONE]\n\n');
    }),
  );
  return { llm, open };
}

/** Bursts of 1,000 requests: no 5xx, every rejection a 429 with Retry-After naming the limit, healthy afterwards. */
describe('limits', () => {
  let t: TestApp;
  afterEach(async () => {
    await t?.close();
  });

  it('limits requests per minute per key on a cheap route', async () => {
    t = await startApp({ API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: '200' });
    const all: Answer[] = [];
    for (let i = 0; i < 10; i++) all.push(...(await Promise.all(Array.from({ length: 100 }, () => get(`${t.url}/api/tools`)))));
    const statuses: Record<number, number> = {};
    for (const a of all) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    expect(statuses).toEqual({ 200: 200, 429: 800 });
    const bad = all.filter((a) => a.status === 429 && (!/^\d+$/.test(a.retryAfter ?? '') || JSON.parse(a.body).limit !== 'RATE_LIMIT_PER_MINUTE'));
    expect(bad).toEqual([]);
    expect((await fetch(`${t.url}/api/health/ready`)).status).toBe(200);
  }, 120_000);

  it('limits concurrent turns per key at the chat route: 429s, and every accepted stream ends with done', async () => {
    t = await startApp({ API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: '0', MAX_CONCURRENT_TURNS_PER_KEY: '4' });
    const statuses: Record<number, number> = {};
    const bad: string[] = [];
    let done = 0;
    for (let i = 0; i < 10; i++) {
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          const res = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ content: 'hi' }) });
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          const text = await res.text();
          if (res.status === 429) {
            if (!/^\d+$/.test(res.headers.get('retry-after') ?? '') || JSON.parse(text).limit !== 'MAX_CONCURRENT_TURNS_PER_KEY') bad.push(text);
          } else if (/event: done/.test(text)) done++;
          else bad.push(`${res.status} ${text.slice(-200)}`);
        }),
      );
    }
    expect(Object.keys(statuses).filter((s) => Number(s) >= 500)).toEqual([]);
    expect(Object.keys(statuses).sort()).toEqual(['200', '429']);
    expect(statuses[200]).toBe(done);
    expect(bad).toEqual([]);
    // the slots are released: a turn after the burst is accepted
    const after = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hi' }, headers: auth });
    expect(after.events.at(-1)!.event).toBe('done');
    expect((await fetch(`${t.url}/api/health/ready`)).status).toBe(200);
  }, 120_000);

  it("holds a detached turn's slots until its run ends, not until its response closes", async () => {
    // the model answers only when the gate opens: until then every run is running
    const { llm, open } = await gatedModel(() => true);
    try {
      t = await startApp({ API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: '0', MAX_CONCURRENT_TURNS_PER_KEY: '2', LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        // start a detached turn and leave as soon as it has started
        const started = await sse(`${t.url}/api/chat/messages`, { body: { content: `detached ${i}`, options: { detach: true } }, headers: auth, onEvent: (e) => (e.event === 'start' ? 'close' : undefined) });
        expect(started.status).toBe(200);
        ids.push(started.events[0].data.requestId as string);
      }
      const status = async (id: string) => ((await (await fetch(`${t.url}/api/chat/runs/${id}`, { headers: auth })).json()) as { status: string }).status;
      // both runs reached the model after their clients left: they go on without a client
      await waitFor(() => llm.chatRequests.length >= 2, { what: 'both detached runs to call the model' });
      expect(await Promise.all(ids.map(status))).toEqual(['running', 'running']);
      // both runs go on without a client and still count: a third turn is refused
      const third = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ content: 'third' }) });
      expect(third.status).toBe(429);
      expect(JSON.parse(await third.text()).limit).toBe('MAX_CONCURRENT_TURNS_PER_KEY');
      // tool-only execution calls the model too, so it counts as a turn
      const execute = await fetch(`${t.url}/api/orchestration/execute`, { method: 'POST', headers: auth, body: JSON.stringify({ userInput: 'list the files' }) });
      expect(execute.status).toBe(429);
      await execute.text();
      open();
      await waitFor(async () => !(await Promise.all(ids.map(status))).includes('running'), { timeoutMs: 10_000, what: 'both runs to end once the model answers' });
      expect(await Promise.all(ids.map(status))).toEqual(['completed', 'completed']);
      // their slots are back: a turn is accepted again
      await waitFor(async () => (await t.app.get(DataSource).query('SELECT 1 FROM turn_slots')).length === 0, { what: 'the runs to give their slots back' });
      const after = await sse(`${t.url}/api/chat/messages`, { body: { content: 'after' }, headers: auth });
      expect(after.status).toBe(200);
      expect(after.events.at(-1)!.event).toBe('done');
    } finally {
      open();
      await llm.close();
    }
  }, 60_000);

  it("counts a resume or a fork against its run's project, not the default one", async () => {
    const { llm, open } = await gatedModel((body) => body.includes('hold the slot'));
    try {
      t = await startApp({ API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: '0', MAX_CONCURRENT_TURNS_PER_PROJECT: '1', TWO_STAGE_ENABLED: 'true', LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
      const beta = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'quick', projectId: 'beta' }, headers: auth });
      expect(beta.events.at(-1)!.event).toBe('done');
      // project default is now full
      await sse(`${t.url}/api/chat/messages`, { body: { content: 'hold the slot', options: { detach: true } }, headers: auth, onEvent: (e) => (e.event === 'start' ? 'close' : undefined) });
      const inDefault = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ content: 'another' }) });
      expect(inDefault.status).toBe(429);
      await inDefault.text();
      // a resume of beta's run is beta's business: whatever the route answers, it is not default's 429
      const resume = await fetch(`${t.url}/api/chat/messages_two_stage/resume`, { method: 'POST', headers: auth, body: JSON.stringify({ requestId: beta.events[0].data.requestId, resumeFromPhaseIndex: 1 }) });
      const text = await resume.text();
      expect(resume.status).not.toBe(429);
      expect(text).not.toContain('MAX_CONCURRENT_TURNS_PER_PROJECT');
      // likewise a fork, which names its run in the path
      const fork = await fetch(`${t.url}/api/chat/runs/${beta.events[0].data.requestId}/fork`, { method: 'POST', headers: auth, body: JSON.stringify({ fromPhaseIndex: 1 }) });
      const forkText = await fork.text();
      expect(fork.status).not.toBe(429);
      expect(forkText).not.toContain('MAX_CONCURRENT_TURNS_PER_PROJECT');
    } finally {
      open();
      await llm.close();
    }
  }, 60_000);
});
