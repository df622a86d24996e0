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
    for (const tail of ['\n', '\n\n', '\r', '\r\n\r\n']) {
      const e = new SseDecoder();
      const out = [...e.push(`data: a${tail}`), ...e.end()];
      expect(out).toEqual([{ event: undefined, data: 'a' }]);
    }
  });

  it('ignores lines that are not fields (a bare JSON error body) and unknown fields', () => {
    const d = new SseDecoder();
    expect([...d.push('{"error":"boom"}\nfoo: bar\ndata: ok\n\n'), ...d.end()]).toEqual([{ event: undefined, data: 'ok' }]);
  });

  it('decodes a megabyte-long data line fed one small chunk at a time', () => {
    const big = 'x'.repeat(1 << 20);
    const wire = bytes(`data: ${big}\n\n`);
    const d = new SseDecoder();
    const out = [];
    for (let i = 0; i < wire.length; i += 64) out.push(...d.push(wire.subarray(i, i + 64)));
    expect([...out, ...d.end()]).toEqual([{ event: undefined, data: big }]);
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

  it('splits a megabyte-long line fed one small chunk at a time, and \\r\\n cut between chunks', () => {
    const big = 'y'.repeat(1 << 20);
    const wire = bytes(`${big}\r\nnext\rlast`);
    const d = new LineDecoder();
    const lines = [];
    for (let i = 0; i < wire.length; i += 64) lines.push(...d.push(wire.subarray(i, i + 64)));
    expect([...lines, ...d.end()]).toEqual([big, 'next', 'last']);
    for (const size of [1, 2, 3]) {
      const e = new LineDecoder();
      const text = 'a\r\nb\r\n\r\nc\nd\re';
      const out = [];
      for (let i = 0; i < text.length; i += size) out.push(...e.push(text.slice(i, i + size)));
      expect([...out, ...e.end()]).toEqual(['a', 'b', '', 'c', 'd', 'e']);
    }
  });
});
