import { startApp, type TestApp } from '../support/app';
import { sse } from '../support/sse-client';

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
});
