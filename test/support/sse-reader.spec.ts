import { Readable } from 'node:stream';
import { readSseFrames, SseReader } from './sse-reader';

describe('SseReader (the tests and benches read Orion streams with it)', () => {
  it('reads id, event and data split anywhere, a character split across chunks included, and keeps comments', () => {
    const text = ': keep-alive\n\nid: 7\nevent: chunk\ndata: {"content":"héllo"}\n\ndata: [DONE]\n\n';
    const bytes = new TextEncoder().encode(text);
    const r = new SseReader();
    const frames = Array.from(bytes, (b) => r.push(Uint8Array.of(b))).flat();
    expect(frames).toEqual([
      { id: '7', event: 'chunk', data: '{"content":"héllo"}' },
      { id: undefined, event: 'message', data: '[DONE]' },
    ]);
    expect(r.comments).toEqual(['keep-alive']);
  });

  it('stops reading a body where the caller says so', async () => {
    const body = Readable.from(['event: start\ndata: {}\n\n', 'event: chunk\ndata: {}\n\n', 'event: done\ndata: {}\n\n']);
    const seen = await readSseFrames(body, (f) => f.event === 'chunk');
    expect(seen.map((f) => f.event)).toEqual(['start', 'chunk']);
  });
});
