import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { RequestGuard } from '../request-guard';
import { bodyOf, modelFetch, StreamedResponse } from './model-fetch';
import { readBody } from './read-body';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** A body read to its end through readBody, as the adapters read it; `onChunk` runs after each chunk. */
async function readText(body: ReturnType<typeof bodyOf>, onChunk: () => void = () => undefined): Promise<string> {
  const guard = new RequestGuard({ timeoutMs: 5000, idleTimeoutMs: 2000 });
  let text = '';
  try {
    for await (const chunk of readBody(body, guard)) {
      text += Buffer.from(chunk).toString('utf8');
      onChunk();
    }
  } finally {
    guard.dispose();
  }
  return text;
}

describe('modelFetch', () => {
  let server: Server;
  let base: string;
  let handler: Handler;
  const f = modelFetch();

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => handler(req, body, res));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends method, headers and body as given, and returns a 2xx event stream as a Node stream', async () => {
    let seen: { method?: string; auth?: string; type?: string; body?: string } = {};
    handler = (req, body, res) => {
      seen = { method: req.method, auth: req.headers.authorization, type: req.headers['content-type'], body };
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'r1' });
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: [DONE]\n\n'), 20);
    };
    const res = await f(`${base}/v1/chat/completions`, { method: 'post', headers: new Headers({ Authorization: 'Bearer k', 'Content-Type': 'application/json' }), body: '{"a":1}' });
    expect(seen).toEqual({ method: 'POST', auth: 'Bearer k', type: 'application/json', body: '{"a":1}' });
    expect(res).toBeInstanceOf(StreamedResponse);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('r1');
    const body = bodyOf(res);
    expect(body).toBeInstanceOf(Readable);
    expect(await readText(body)).toBe('data: 1\n\ndata: [DONE]\n\n');
  });

  it('sends a string body as its UTF-8 bytes, with their length (not the string length) as Content-Length', async () => {
    let seen: { body?: string; length?: string } = {};
    handler = (req, body, res) => {
      seen = { body, length: req.headers['content-length'] };
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: [DONE]\n\n');
    };
    const text = JSON.stringify({ messages: [{ role: 'user', content: 'Grüße, 你好 👋' }] });
    await readText(bodyOf(await f(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: text })));
    expect(seen).toEqual({ body: text, length: String(Buffer.byteLength(text)) });
  });

  it('decodes a compressed answer as fetch does: a gzip stream and a gzip error message', async () => {
    // a proxy may compress though no Accept-Encoding was sent
    handler = (req, _body, res) => {
      const ok = req.url === '/ok';
      res.writeHead(ok ? 200 : 400, { 'content-type': ok ? 'text/event-stream' : 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(ok ? 'data: {"x":1}\n\ndata: [DONE]\n\n' : '{"error":{"message":"bad thing"}}'));
    };
    expect(await readText(bodyOf(await f(`${base}/ok`, {})))).toBe('data: {"x":1}\n\ndata: [DONE]\n\n');
    expect(await (await f(`${base}/err`, {})).json()).toEqual({ error: { message: 'bad thing' } });
  });

  it('still reads whole through the Response methods when a caller wants the stream in one piece', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"x":1}\n\n');
    };
    expect(await (await f(`${base}/a`, {})).text()).toBe('data: {"x":1}\n\n');
    const viaWeb = await f(`${base}/a`, {});
    let text = '';
    for await (const chunk of viaWeb.body as unknown as AsyncIterable<Uint8Array>) text += Buffer.from(chunk).toString('utf8');
    expect(text).toBe('data: {"x":1}\n\n');
  });

  it('reads JSON successes, error statuses with their bodies, and empty answers as a Response would', async () => {
    handler = (req, _body, res) => {
      if (req.url === '/json') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (req.url === '/429') return res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' }).end('{"error":{"message":"slow down"}}');
      res.writeHead(204).end();
    };
    const json = await f(`${base}/json`, { method: 'POST', body: '{}' });
    expect(await json.json()).toEqual({ ok: true });
    const limited = await f(`${base}/429`, { method: 'POST', body: '{}' });
    expect([limited.status, limited.ok, limited.headers.get('retry-after')]).toEqual([429, false, '2']);
    expect(await limited.text()).toBe('{"error":{"message":"slow down"}}');
    const empty = await f(`${base}/empty`, {});
    expect([empty.status, empty.body]).toEqual([204, null]);
  });

  it('streams any success as it arrives, whatever its content type says', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first ');
      // the rest only once the client has read the first part: a buffered body would never come
      void released.then(() => res.end('rest'));
    };
    const res = await f(`${base}/p`, { method: 'POST', body: '{}' });
    expect(await readText(bodyOf(res), release)).toBe('first rest');
  });

  it('follows a 307/308 redirect with the same method and body, as fetch does', async () => {
    const hits: string[] = [];
    handler = (req, body, res) => {
      hits.push(`${req.method} ${req.url} ${body}`);
      if (req.url === '/old') return res.writeHead(307, { location: '/new' }).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"moved":true}');
    };
    const res = await f(`${base}/old`, { method: 'POST', body: '{"q":1}' });
    expect(await res.json()).toEqual({ moved: true });
    expect(hits).toEqual(['POST /old {"q":1}', 'POST /new {"q":1}']);
  });

  it('aborts a streamed answer mid-way: the read ends with the abort and the server sees the connection close', async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => (closed = r));
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      res.on('close', () => closed());
      // and then nothing more
    };
    const caller = new AbortController();
    const guard = new RequestGuard({ signal: caller.signal, timeoutMs: 5000, idleTimeoutMs: 5000 });
    const res = await f(`${base}/s`, { signal: guard.signal });
    const got: string[] = [];
    let error: Error | undefined;
    try {
      for await (const chunk of readBody(bodyOf(res), guard)) {
        got.push(Buffer.from(chunk).toString('utf8'));
        caller.abort();
      }
    } catch (err) {
      error = err as Error;
    }
    guard.dispose();
    expect(got).toEqual(['data: 1\n\n']);
    expect(error?.name).toBe('AbortError');
    await serverSawClose;
  });

  it('rejects when the connection fails, with the cause a network classifier can read', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    await expect(f(`http://127.0.0.1:${closedPort}/`, { method: 'POST', body: '{}' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('leaves what it does not send itself to the global fetch (a Request object, a streamed body)', async () => {
    handler = (_req, body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ body }));
    const viaRequest = await f(new Request(`${base}/r`, { method: 'POST', body: 'abc' }));
    expect(viaRequest).not.toBeInstanceOf(StreamedResponse);
    expect(await viaRequest.json()).toEqual({ body: 'abc' });
    const streamed = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('xyz'));
        c.close();
      },
    });
    const viaStream = await f(`${base}/s`, { method: 'POST', body: streamed, duplex: 'half' } as RequestInit);
    expect(await viaStream.json()).toEqual({ body: 'xyz' });
  });
});
