import fc from 'fast-check';
import { type JsonCell, jsonRows, RawJson } from './json-rows';

describe('jsonRows', () => {
  const cell = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue().map((v) => new RawJson(JSON.stringify(v))));

  it('is a JSON array of the rows, RawJson cells as the JSON they hold', () => {
    fc.assert(
      fc.property(fc.array(fc.array(cell, { maxLength: 6 }), { maxLength: 20 }), (rows: JsonCell[][]) => {
        const expected = rows.map((r) => r.map((c) => (c instanceof RawJson ? JSON.parse(c.text) : c)));
        expect(JSON.parse(jsonRows(rows))).toEqual(expected);
      }),
    );
  });

  it('embeds a RawJson cell without serializing it again', () => {
    expect(jsonRows([['id', 3, null, new RawJson('{"content":"a \\"b\\""}')]])).toBe('[["id",3,null,{"content":"a \\"b\\""}]]');
    expect(jsonRows([])).toBe('[]');
  });
});
