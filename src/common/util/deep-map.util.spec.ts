import { deepMap, WALK } from './deep-map.util';

describe('deepMap', () => {
  it('copies without mutating, applying leaf, key and member rules', () => {
    const input = { a: 'x', 'b\u0000': [1, 'y'], secret: { deep: 'z' } };
    const out = deepMap(input, { maxDepth: 10, leaf: (v) => (typeof v === 'string' ? v.toUpperCase() : v), key: (k) => k.replace('\u0000', '?'), member: (k) => (k === 'secret' ? 'masked' : WALK) });
    expect(out).toEqual({ a: 'X', 'b?': [1, 'Y'], secret: 'masked' });
    expect(input).toEqual({ a: 'x', 'b\u0000': [1, 'y'], secret: { deep: 'z' } });
  });

  it('tells cycles from shared references', () => {
    const shared = { n: 1 };
    const cyclic: Record<string, unknown> = { left: shared, right: shared };
    cyclic.self = cyclic;
    expect(deepMap(cyclic, { maxDepth: 10, repeats: { of: 'cycle', becomes: 'CYCLE' } })).toEqual({ left: { n: 1 }, right: { n: 1 }, self: 'CYCLE' });
    expect(deepMap(cyclic, { maxDepth: 10, repeats: { of: 'any', becomes: 'SEEN' } })).toEqual({ left: { n: 1 }, right: 'SEEN', self: 'SEEN' });
  });

  it('cuts depth, keeps a __proto__ key as data, and survives throwing getters when told to', () => {
    const deep = { a: { b: { c: { d: 1 } } } };
    expect(deepMap(deep, { maxDepth: 2, tooDeep: () => '…' })).toEqual({ a: { b: { c: '…' } } });
    const proto = deepMap(JSON.parse('{"__proto__":{"polluted":true}}'), { maxDepth: 5 }) as Record<string, unknown>;
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.keys(proto)).toEqual(['__proto__']);
    const hostile = Object.defineProperty({ ok: 1 }, 'bad', { enumerable: true, get: () => { throw new Error('no'); } });
    expect(deepMap(hostile, { maxDepth: 5, unreadable: '[Unreadable]' })).toEqual({ ok: 1, bad: '[Unreadable]' });
    expect(() => deepMap(hostile, { maxDepth: 5 })).toThrow('no');
  });
});
