import fc from 'fast-check';
import { stripNul } from '../common/util/text-safety.util';
import { type JsonCell, jsonRows, RawJson } from './json-rows';

describe('jsonRows', () => {
  // any UTF-16 code units: NUL and lone surrogates included
  const cell = fc.oneof(fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }), fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue().map((v) => new RawJson(JSON.stringify(v))));

  it('is a JSON array of the rows, RawJson cells as the JSON they hold, text cells made storable', () => {
    fc.assert(
      fc.property(fc.array(fc.array(cell, { maxLength: 6 }), { maxLength: 20 }), (rows: JsonCell[][]) => {
        const expected = rows.map((r) => r.map((c) => (c instanceof RawJson ? JSON.parse(c.text) : typeof c === 'string' ? stripNul(c) : c)));
        expect(JSON.parse(jsonRows(rows))).toEqual(expected);
      }),
    );
  });

  it('embeds a RawJson cell without serializing it again', () => {
    expect(jsonRows([['id', 3, null, new RawJson('{"content":"a \\"b\\""}')]])).toBe('[["id",3,null,{"content":"a \\"b\\""}]]');
    expect(jsonRows([])).toBe('[]');
  });

  it('makes text cells storable as a text parameter was: NUL and lone surrogates become U+FFFD', () => {
    // jsonb refuses "\u0000" and a lone "\ud800" escape; one such character must not fail a batch
    expect(JSON.parse(jsonRows([['a\u0000b', 'x\ud800y', 'ok 🙂']]))).toEqual([['a\ufffdb', 'x\ufffdy', 'ok 🙂']]);
  });
});
