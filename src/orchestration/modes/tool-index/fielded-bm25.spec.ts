import fc from 'fast-check';
import { FieldedBm25 } from './fielded-bm25';

const params = { k: 1.2, b: 0.7, d: 0.5 };
const words = fc.constantFrom('weather', 'city', 'file', 'read', 'convert', 'money', 'book', 'table');
const doc = fc.tuple(fc.array(words, { maxLength: 4 }), fc.array(words, { maxLength: 8 }));

const sorted = (idx: FieldedBm25, q: string[]) =>
  idx
    .search(q, q.map(() => 1))
    .map((c) => ({ ...c, score: Math.round(c.score * 1e9) }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));

describe('FieldedBm25', () => {
  it('scores an index that went through removals exactly like one built from the remaining documents', () => {
    fc.assert(
      fc.property(fc.array(doc, { minLength: 1, maxLength: 12 }), fc.array(fc.boolean(), { maxLength: 12 }), fc.array(words, { minLength: 1, maxLength: 3 }), (docs, drop, q) => {
        const churned = new FieldedBm25([2, 1], params);
        docs.forEach((d, i) => churned.add(`t${i}`, d));
        docs.forEach((_, i) => drop[i] && churned.remove(`t${i}`));
        const fresh = new FieldedBm25([2, 1], params);
        docs.forEach((d, i) => !drop[i] && fresh.add(`t${i}`, d));
        const query = [...new Set(q)];
        expect(sorted(churned, query)).toEqual(sorted(fresh, query));
        expect(churned.size).toBe(fresh.size);
      }),
    );
  });

  it('ranks a rarer term and a shorter name field higher, and counts coverage once per term', () => {
    const idx = new FieldedBm25([2, 1], params);
    idx.add('get_weather', [['get', 'weather'], ['weather', 'city']]);
    idx.add('get_file', [['get', 'file'], ['read', 'file', 'city']]);
    const [top, other] = idx.search(['weather', 'get'], [5, 1]).sort((a, b) => b.score - a.score);
    expect(top.id).toBe('get_weather');
    expect(top.covered).toBe(6);
    expect(other.covered).toBe(1);
    expect(idx.search(['nothing'], [1])).toEqual([]);
    expect(idx.search(['weather'], [1], (id) => id !== 'get_weather')).toEqual([]);
  });

  it('rejects a duplicate id and empties on clear', () => {
    const idx = new FieldedBm25([1], params);
    idx.add('a', [['x']]);
    expect(() => idx.add('a', [['y']])).toThrow(/duplicate/);
    idx.clear();
    expect(idx.size).toBe(0);
    expect(idx.search(['x'], [1])).toEqual([]);
  });
});
