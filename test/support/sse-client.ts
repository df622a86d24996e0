import { request } from 'node:http';

export interface SseEvent {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

export interface SseResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  events: SseEvent[];
  comments: string[];
  /** the raw body when the response was not an event stream (JSON errors) */
  body: string;
}

/** Parses an SSE byte stream incrementally (the WHATWG rules Orion's writer needs). */
export class SseParser {
  private buffer = '';
  readonly comments: string[] = [];

  push(text: string): SseEvent[] {
    this.buffer += text;
    const out: SseEvent[] = [];
    let i: number;
    while ((i = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, i);
      this.buffer = this.buffer.slice(i + 2);
      let id: string | undefined;
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) out.push({ id, event, data: JSON.parse(data.join('\n')) });
    }
    return out;
  }
}

export interface SseRequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  /** called per event; return 'close' to drop the connection there */
  onEvent?: (e: SseEvent, all: SseEvent[]) => void | 'close';
  timeoutMs?: number;
}

/** Sends a request and reads the whole SSE response over a real socket. */
export function sse(url: string, opts: SseRequestOptions = {}): Promise<SseResponse> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method ?? (payload ? 'POST' : 'GET'),
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), accept: 'text/event-stream', ...opts.headers },
      },
      (res) => {
        const parser = new SseParser();
        const events: SseEvent[] = [];
        let body = '';
        let settled = false;
        const finish = () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, events, comments: parser.comments, body });
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) return;
          for (const e of parser.push(chunk)) {
            events.push(e);
            if (opts.onEvent?.(e, events) === 'close') {
              req.destroy();
              finish();
              return;
            }
          }
        });
        res.on('end', finish);
        res.on('close', finish);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`SSE request to ${url} timed out`));
    }, opts.timeoutMs ?? 20_000);
    req.on('error', (e) => {
      clearTimeout(timer);
      if ((e as NodeJS.ErrnoException).code === 'ECONNRESET') return;
      reject(e);
    });
    if (payload) req.write(payload);
    req.end();
  });
}

/** Asserts API.md's envelope invariants and returns the events by type. */
export function checkEnvelope(events: SseEvent[]): void {
  events.forEach((e, i) => {
    const d = e.data;
    if (Number(e.id) !== d.seq) throw new Error(`event ${i}: id ${e.id} != seq ${d.seq}`);
    if (i > 0 && (d.seq as number) !== (events[i - 1].data.seq as number) + 1) throw new Error(`gap before seq ${d.seq}`);
    for (const k of ['requestId', 'projectId', 'conversationId', 'seq', 'phase', 'phaseIndex', 'cycleIndex']) {
      if (d[k] === undefined) throw new Error(`event ${i} (${e.event}) lacks ${k}`);
    }
  });
}
