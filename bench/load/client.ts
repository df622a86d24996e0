/**
 * The load client: N concurrent turns against one SSE route, started evenly over `rampMs` (so
 * the listen backlog is not the thing measured), each read to its end. Per chunk, the added
 * latency is arrival time minus the emit time the fake model wrote into the delta's content.
 */
import { Agent, request } from 'node:http';
import { SseReader } from '../../test/support/sse-reader';

export interface LoadResult {
  completed: number;
  errors: number;
  errorSamples: string[];
  latenciesMs: Float64Array;
  /** `data` events on the client's sockets: a proxy for the server's socket writes */
  dataEvents: number;
  sseBytes: number;
  toolCalls: number;
  maxInFlight: number;
  wallMs: number;
  /** per completed turn: request sent → response headers (the turn accepted and its stream opened), sorted */
  openMs: Float64Array;
  /** per completed turn: request sent → `done`, sorted */
  turnMs: Float64Array;
}

const now = () => performance.timeOrigin + performance.now();
const STAMP = /(\d{13}\.\d{3}) /g;

export async function runLoad(opts: { port: number; path: string; n: number; rampMs: number; timeoutMs: number }): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const lat: number[] = [];
  const r: LoadResult = { completed: 0, errors: 0, errorSamples: [], latenciesMs: new Float64Array(), dataEvents: 0, sseBytes: 0, toolCalls: 0, maxInFlight: 0, wallMs: 0, openMs: new Float64Array(), turnMs: new Float64Array() };
  const opened: number[] = [];
  const turns: number[] = [];
  let inFlight = 0;
  const fail = (why: string) => {
    r.errors++;
    if (r.errorSamples.length < 5) r.errorSamples.push(why);
  };
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      inFlight++;
      r.maxInFlight = Math.max(r.maxInFlight, inFlight);
      let settled = false;
      const sent = now();
      let openedAt = 0;
      const finish = (err?: string) => {
        if (settled) return;
        settled = true;
        inFlight--;
        if (err) fail(err);
        else {
          r.completed++;
          opened.push(openedAt - sent);
          turns.push(now() - sent);
        }
        resolve();
      };
      const req = request({ host: '127.0.0.1', port: opts.port, path: opts.path, method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
        openedAt = now();
        if (res.statusCode !== 200) {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c.slice(0, 300 - body.length)));
          res.on('end', () => finish(`HTTP ${res.statusCode} ${body}`));
          res.on('error', () => finish(`HTTP ${res.statusCode}`));
          return;
        }
        const sse = new SseReader();
        let done = false;
        res.on('data', (c: Buffer) => {
          const at = now();
          r.dataEvents++;
          r.sseBytes += c.length;
          for (const f of sse.push(c)) {
            const event = f.event;
            const data = f.data;
            if (event === 'chunk') for (const m of data.matchAll(STAMP)) lat.push(at - Number(m[1]));
            else if (event === 'tool_calls') r.toolCalls++;
            else if (event === 'error') return finish(`error event: ${/"code":"([^"]*)","message":"([^"]{0,160})/.exec(data)?.slice(1).join(': ') ?? data.slice(0, 200)}`);
            else if (event === 'done') {
              done = true;
              const stop = /"stopReason":"(\w+)"/.exec(data)?.[1];
              if (stop !== 'final_answer') return finish(`stopReason ${stop}`);
            }
          }
        });
        res.on('end', () => finish(done ? undefined : 'stream ended without done'));
        res.on('error', (e) => finish(`response: ${e.message}`));
      });
      req.setTimeout(opts.timeoutMs, () => {
        req.destroy();
        finish(`timeout after ${opts.timeoutMs} ms`);
      });
      req.on('error', (e) => finish(`request: ${e.message}`));
      req.end(JSON.stringify({ content: `load turn ${i}` }));
    });
  const t0 = Date.now();
  const all: Promise<void>[] = [];
  for (let i = 0; i < opts.n; i++) {
    all.push(one(i));
    const due = (opts.rampMs * (i + 1)) / opts.n - (Date.now() - t0);
    if (due >= 4) await new Promise((res) => setTimeout(res, due));
  }
  await Promise.all(all);
  r.wallMs = Date.now() - t0;
  r.latenciesMs = Float64Array.from(lat).sort();
  r.openMs = Float64Array.from(opened).sort();
  r.turnMs = Float64Array.from(turns).sort();
  agent.destroy();
  return r;
}

export const pct = (xs: Float64Array, p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] : Number.NaN);
