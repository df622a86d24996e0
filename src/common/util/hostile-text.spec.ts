import { jsonDepth, MAX_JSON_DEPTH } from './json-depth.util';
import { storageSafe } from './text-safety.util';
import { ToolCallAccumulator } from '../../llm/tool-call-accumulator';
import { parseToolArguments } from '../../tools/tool-signature.util';

describe('hostile model output is data', () => {
  it('replaces lone surrogates (and NUL) with U+FFFD, keeps pairs', () => {
    const out = storageSafe({ text: 'a\uD800b\uDC00c\u0000 😀', ['k\uDBFF']: ['x\uDFFF'] });
    expect(out).toEqual({ text: 'a\uFFFDb\uFFFDc\uFFFD 😀', ['k\uFFFD']: ['x\uFFFD'] });
    // what is stored survives a JSON round trip through a UTF-8 encoder unchanged
    expect(Buffer.from(JSON.stringify(out), 'utf8').toString('utf8')).toBe(JSON.stringify(out));
  });

  it('measures JSON depth without recursion, skipping brackets in strings', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[[{{{{"}]}')).toBe(3);
    expect(jsonDepth('"\\"[["')).toBe(0);
    expect(jsonDepth('['.repeat(1_000_000))).toBe(MAX_JSON_DEPTH + 1);
  });

  it('refuses tool arguments nested deeper than the limit with a clear reason, from the model and from a client', () => {
    const deep = '{"a":' + '['.repeat(200_000) + ']'.repeat(200_000) + '}';
    const acc = new ToolCallAccumulator();
    acc.push({ type: 'tool-call-delta', index: 0, id: 'c1', name: 'search', argumentsFragment: deep });
    expect(acc.finish()).toEqual([]);
    expect(acc.invalid[0].error).toMatch(/nested deeper than 64 levels/);
    const parsed = parseToolArguments(deep);
    expect(parsed).toMatchObject({ ok: false, message: expect.stringMatching(/nested deeper than 64/) });
    const fine = '{"a":' + '['.repeat(10) + ']'.repeat(10) + '}';
    expect(parseToolArguments(fine)).toMatchObject({ ok: true });
  });
});
