import { LlmError } from '../llm-adapter.port';
import { LineDecoder } from './line-decoder';
import { SseDecoder } from './sse-decoder';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('SseDecoder', () => {
  it('decodes data, event names and comments, whatever the chunking', () => {
    const wire = ': keep-alive\r\n\r\ndata: {"a":1}\r\n\r\nevent: error\ndata: {"error":{}}\n\ndata: line1\rdata: line2\r\rid: 7\nretry: 10\ndata:[DONE]\n\n';
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

  it('delivers a last message that lacks its blank line, also when it ends in a lone CR', () => {
    const d = new SseDecoder();
    expect(d.push('data: {"x":1}')).toEqual([]);
    expect(d.end()).toEqual([{ event: undefined, data: '{"x":1}' }]);
    const cr = new SseDecoder();
    expect(cr.push('data: {"y":2}\r')).toEqual([]);
    expect(cr.end()).toEqual([{ event: undefined, data: '{"y":2}' }]);
  });

  it('keeps a multi-byte character cut between chunks', () => {
    const all = bytes('data: héllo → wörld\n\n');
    const d = new SseDecoder();
    const out = [];
    for (const b of all) out.push(...d.push(new Uint8Array([b])));
    expect(out).toEqual([{ event: undefined, data: 'héllo → wörld' }]);
  });

  it('fails with a clear error once a line passes the bound, and not before', () => {
    const d = new SseDecoder(1024);
    expect(d.push(`data: ${'a'.repeat(1000)}\n\n`)).toHaveLength(1);
    const over = new SseDecoder(1024);
    over.push('data: ');
    let thrown: unknown;
    try {
      for (let i = 0; i < 20; i++) over.push('b'.repeat(100));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(LlmError);
    expect((thrown as LlmError).info).toEqual(expect.objectContaining({ code: 'invalid_response', retryable: false }));
    expect((thrown as LlmError).message).toMatch(/longer than 1024 characters \(LLM_MAX_LINE_LENGTH\)/);
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

  it('splits on \\n, \\r\\n and lone \\r, a \\r\\n pair cut between chunks counting once', () => {
    const d = new LineDecoder();
    const lines = [...d.push('a\r'), ...d.push('\nb\rc\r'), ...d.push('d\n\n'), ...d.push('last')];
    expect([...lines, ...d.end()]).toEqual(['a', 'b', 'c', 'd', '', 'last']);
  });

  it('fails with a clear error once a line passes the bound', () => {
    const d = new LineDecoder(1024);
    expect(d.push(`${'x'.repeat(1024)}\n`)).toEqual(['x'.repeat(1024)]);
    expect(() => {
      for (let i = 0; i < 20; i++) d.push('y'.repeat(100));
    }).toThrow(/longer than 1024 characters \(LLM_MAX_LINE_LENGTH\)/);
  });
});
