import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'express';
import { SseWriter } from './sse-writer';

/** A real HTTP exchange: the writer on the server side, a raw reader on the client side. */
async function exchange(onRequest: (w: SseWriter) => Promise<void>, keepAliveMs = 100): Promise<string> {
  const server: Server = createServer((_req, res) => {
    const w = new SseWriter(Object.assign(res, { status: (c: number) => ((res.statusCode = c), res) }) as unknown as Response, keepAliveMs);
    void onRequest(w);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    return await new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.end();
    });
  } finally {
    server.close();
  }
}

describe('SseWriter', () => {
  it('writes id, event and one data line per event', async () => {
    const body = await exchange(async (w) => {
      await w.send(1, 'chunk', { content: 'a\nb' });
      w.end();
    });
    expect(body).toBe('id: 1\nevent: chunk\ndata: {"content":"a\\nb"}\n\n');
  });

  it('sends keep-alive comments while nothing else is sent, and none while events flow', async () => {
    // margins wide enough for a loaded machine: a busy gap is 10 ms against a 300 ms keep-alive
    const body = await exchange(async (w) => {
      await new Promise((r) => setTimeout(r, 1000)); // idle: ~3 keep-alives at 300 ms
      for (let i = 0; i < 5; i++) {
        await w.send(i + 1, 'chunk', { i });
        await new Promise((r) => setTimeout(r, 10)); // busy: none
      }
      w.end();
    }, 300);
    const [idle, busy] = [body.slice(0, body.indexOf('id: 1')), body.slice(body.indexOf('id: 1'))];
    expect(idle.match(/^: keep-alive$/gm)?.length).toBeGreaterThanOrEqual(2);
    expect(busy).not.toContain(': keep-alive');
  });
});
