import { Controller, type INestApplication, MessageEvent, Sse } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { concat, defer, delay, from, type Observable, of, timer, concatMap, map } from 'rxjs';
import { toMessageEvents, type WireMessage } from './message-events';

let source: () => Observable<WireMessage> = () => of();

@Controller()
class StreamController {
  @Sse('s')
  s(): Observable<MessageEvent> {
    return toMessageEvents(defer(() => source()), 100);
  }
}

/** A real HTTP exchange through Nest's @Sse: the raw bytes a client reads. */
async function body(app: INestApplication): Promise<string> {
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/s' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('toMessageEvents under @Sse', () => {
  let app: INestApplication;
  beforeAll(async () => {
    const ref = await Test.createTestingModule({ controllers: [StreamController] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterAll(() => app.close());

  it('writes event, id and one data line of JSON per event', async () => {
    source = () => of({ id: 1, type: 'chunk', data: { content: 'a\nb' } });
    expect(await body(app)).toBe('\nevent: chunk\nid: 1\ndata: {"content":"a\\nb"}\n\n');
  });

  it('sends keep-alive comments while nothing else is sent, and none while events flow', async () => {
    source = () =>
      concat(
        timer(350).pipe(map(() => null)), // idle: ~3 keep-alives at 100 ms
        from([1, 2, 3, 4, 5]).pipe(concatMap((i) => of(i).pipe(delay(40)))), // busy: none
      ).pipe(concatMap((i) => (i === null ? of() : of({ id: i, type: 'chunk', data: { i } }))));
    const text = await body(app);
    const [idle, busy] = [text.slice(0, text.indexOf('event: chunk')), text.slice(text.indexOf('event: chunk'))];
    expect(idle.match(/^: keep-alive$/gm)?.length).toBeGreaterThanOrEqual(2);
    expect(busy).not.toContain(': keep-alive');
  });

  it('keeps one keep-alive timer per stream, however many events pass (not one per event)', async () => {
    const started = jest.spyOn(global, 'setTimeout');
    const repeating = jest.spyOn(global, 'setInterval');
    try {
      const events = Array.from({ length: 500 }, (_, i) => ({ id: i + 1, type: 'chunk', data: { i } }));
      const seen: MessageEvent[] = [];
      await new Promise<void>((resolve, reject) => toMessageEvents(from(events), 15_000).subscribe({ next: (m) => seen.push(m), error: reject, complete: resolve }));
      expect(seen).toHaveLength(500);
      expect(started.mock.calls.length + repeating.mock.calls.length).toBeLessThanOrEqual(2);
    } finally {
      started.mockRestore();
      repeating.mockRestore();
    }
  });

  it('ends the stream with an error when an event cannot be serialized, and goes on serving other streams', async () => {
    const outcome = await new Promise<string>((resolve) =>
      toMessageEvents(of({ id: 1, type: 'result', data: { n: BigInt(1) } }), 15_000).subscribe({
        next: () => resolve('sent'),
        error: (e: Error) => resolve(`error: ${e.message}`),
        complete: () => resolve('completed'),
      }),
    );
    expect(outcome).toMatch(/^error: .*BigInt/);
    source = () => of({ id: 1, type: 'chunk', data: { content: 'ok' } });
    expect(await body(app)).toContain('data: {"content":"ok"}');
  });
});
