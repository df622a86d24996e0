import { LineDecoder } from './line-decoder';

const enc = (s: string) => new TextEncoder().encode(s);

describe('LineDecoder (Ollama NDJSON)', () => {
  it('puts lines back together whatever the chunking: a split multi-byte character, a split \\r\\n, a long line in 64-byte pieces', () => {
    const d = new LineDecoder();
    const bytes = enc('{"a":"é"}\r\n{"b":1}\n');
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...d.push(bytes.subarray(i, i + 1)));
    expect(out).toEqual(['{"a":"é"}', '{"b":1}']);

    const long = new LineDecoder(2 * 1024 * 1024);
    const piece = enc('x'.repeat(64));
    const got = [...long.push('{"m":"')];
    for (let i = 0; i < 16_384; i++) got.push(...long.push(piece));
    got.push(...long.push('"}\n'));
    expect(got).toHaveLength(1);
    expect(got[0].length).toBe(16_384 * 64 + 8);
    expect(long.end()).toEqual([]);
  });

  it('a line past its bound is an invalid_response error; lines before it in the same chunk come first', () => {
    const d = new LineDecoder(100);
    expect(d.push('{"ok":1}\n' + 'y'.repeat(150))).toEqual(['{"ok":1}']);
    expect(() => d.push('more')).toThrow(/longer than 100 characters/);
  });
});
