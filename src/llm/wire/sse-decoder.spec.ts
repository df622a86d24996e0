import { LineDecoder } from './line-decoder';
import { SseDecoder } from './sse-decoder';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('SseDecoder', () => {
  it('decodes data, event names and comments, whatever the chunking', () => {
    const wire = ': keep-alive\r\n\r\ndata: {"a":1}\r\n\r\nevent: error\ndata: {"error":{}}\n\ndata: line1\ndata: line2\n\ndata:[DONE]\n\n';
    for (const size of [1, 2, 3, 7, wire.length]) {
      const d = new SseDecoder();
      const out = [];
      for (let i = 0; i < wire.length; i += size) out.push(...d.push(bytes(wire.slice(i, i + size))));
      out.push(...d.end());
      expect(out).toEqual([
        { event: undefined, data: '{"a":1}' },
        { event: 'error', data: '{"error":{}}' },
        { event: undefined, data: 'line1\nline2' },
        { event: undefined, data: '[DONE]' },
      ]);
    }
  });

  it('delivers a last message that lacks its blank line', () => {
    const d = new SseDecoder();
    expect(d.push('data: {"x":1}')).toEqual([]);
    expect(d.end()).toEqual([{ event: undefined, data: '{"x":1}' }]);
  });
});

describe('LineDecoder', () => {
  it('keeps multi-byte characters cut between chunks', () => {
    const all = bytes('héllo → wörld\nnext\n');
    const d = new LineDecoder();
    const lines = [];
    for (const b of all) lines.push(...d.push(new Uint8Array([b])));
    expect([...lines, ...d.end()]).toEqual(['héllo → wörld', 'next']);
  });
});
