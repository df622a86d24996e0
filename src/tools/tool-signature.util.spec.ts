import * as fc from 'fast-check';
import { canonicalJson } from '../common/util/canonical-json.util';
import type { AppConfigService } from '../config/app-config.service';
import type { TraceSink } from '../trace/trace-sink.port';
import type { ToolDefinition } from './tool-definition';
import { ToolRegistryService } from './tool-registry.service';
import { ToolRunnerService } from './tool-runner.service';
import { parseToolArguments, toolSignature } from './tool-signature.util';
import { mulberry32 } from '../../test/support/prng';

const RUNS = 600;


/**
 * JSON text of `value` with its object keys in a random order and random JSON whitespace
 * between tokens. Writes text directly, so keys such as "__proto__" are never assigned in JS.
 */
function scrambledJson(value: unknown, seed: number): string {
  const rnd = mulberry32(seed);
  const ws = () => {
    let s = '';
    const n = Math.floor(rnd() * 3);
    for (let i = 0; i < n; i++) s += [' ', '\n', '\t', '\r'][Math.floor(rnd() * 4)];
    return s;
  };
  const write = (v: unknown): string => {
    if (v === null || typeof v !== 'object') return ws() + JSON.stringify(v) + ws();
    if (Array.isArray(v)) return `${ws()}[${v.map(write).join(',') || ws()}]${ws()}`;
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [keys[i], keys[j]] = [keys[j], keys[i]];
    }
    const body = keys.map((k) => `${ws()}${JSON.stringify(k)}${ws()}:${write((v as Record<string, unknown>)[k])}`).join(',');
    return `${ws()}{${body || ws()}}${ws()}`;
  };
  return write(value);
}

const jsonObject = fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 8 });
const seed = fc.integer({ min: 0, max: 0x7fffffff });

function sig(raw: unknown, name = 'tool', projectId = 'p', action = ''): string | null {
  const parsed = parseToolArguments(raw);
  return parsed.ok ? toolSignature({ name, action, args: parsed.value, projectId }) : null;
}

describe('canonical signature (property tests)', () => {
  it('ignores key order and JSON whitespace', () => {
    fc.assert(
      fc.property(jsonObject, seed, seed, (obj, s1, s2) => {
        const a = sig(scrambledJson(obj, s1));
        const b = sig(scrambledJson(obj, s2));
        expect(a).not.toBeNull();
        expect(a).toBe(b);
        expect(a).toBe(sig(JSON.stringify(obj)));
        expect(a).toBe(sig(obj as Record<string, unknown>)); // object arguments too
      }),
      { numRuns: RUNS },
    );
  });

  it('is canonical JSON: no whitespace outside strings, keys sorted, parses back to the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), seed, (value, s) => {
        const text = canonicalJson(JSON.parse(scrambledJson(value, s)));
        expect(text).toBe(canonicalJson(value));
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(JSON.parse(text))).toBe(text); // idempotent
        // without string contents, nothing but structure is left: no whitespace anywhere
        expect(text.replace(/"(?:[^"\\]|\\.)*"/g, '""')).not.toMatch(/\s/);
      }),
      { numRuns: RUNS },
    );
  });

  it('tells different argument values apart', () => {
    fc.assert(
      fc.property(jsonObject, jsonObject, seed, (a, b, s) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(sig(scrambledJson(a, s))).not.toBe(sig(scrambledJson(b, s)));
      }),
      { numRuns: RUNS },
    );
  });

  it('tells different projects, tools and actions apart', () => {
    const id = fc.string({ unit: 'binary', maxLength: 12 });
    fc.assert(
      fc.property(jsonObject, id, id, (obj, x, y) => {
        fc.pre(x !== y);
        const raw = JSON.stringify(obj);
        expect(sig(raw, 'tool', x)).not.toBe(sig(raw, 'tool', y));
        expect(sig(raw, x, 'p')).not.toBe(sig(raw, y, 'p'));
        expect(sig(raw, 'tool', 'p', x)).not.toBe(sig(raw, 'tool', 'p', y));
        // no separator games: moving text between the parts changes the signature
        if (x !== '') expect(sig(raw, `t${x}`, 'p')).not.toBe(sig(raw, 't', `${x}p`));
      }),
      { numRuns: RUNS },
    );
  });

  describe('with schema defaults (through ToolRunnerService.signature)', () => {
    const schema = {
      type: 'object',
      properties: {
        path: { type: 'string', default: '.' },
        recursive: { type: 'boolean', default: false },
        limit: { type: 'integer', default: 10 },
        options: { type: 'object', properties: { depth: { type: 'integer', default: 2 } }, default: {} },
      },
    };
    const def: ToolDefinition = {
      name: 'lister', description: 'd', origin: 'builtin', parameters: schema,
      isAvailable: () => true, execute: async () => ({ output: null }),
    };
    const trace: TraceSink = { record: () => undefined, flush: async () => undefined };
    const config = { get: (k: string) => ({ TOOL_TIMEOUT_MS: 1000, TOOL_RESULT_MAX_BYTES: 65536 } as Record<string, unknown>)[k], list: () => [] } as unknown as AppConfigService;
    const registry = new ToolRegistryService(config, trace);
    registry.register(def);
    const runner = new ToolRunnerService(registry, config, trace);
    const full = { path: '.', recursive: false, limit: 10, options: { depth: 2 } };

    it('does not change when defaults are omitted, spelled out, reordered or respaced', () => {
      const keys = fc.subarray(['path', 'recursive', 'limit', 'options'] as const);
      fc.assert(
        fc.property(keys, seed, fc.boolean(), (present, s, nestedDefault) => {
          const args: Record<string, unknown> = {};
          for (const k of present) args[k] = full[k];
          if (args.options && !nestedDefault) args.options = {}; // nested default filled in too
          const expected = runner.signature({ name: 'lister', arguments: '{}' }, 'proj');
          expect(runner.signature({ name: 'lister', arguments: scrambledJson(args, s) }, 'proj')).toBe(expected);
        }),
        { numRuns: RUNS },
      );
    });

    it('changes when a value differs from its default', () => {
      fc.assert(
        fc.property(fc.integer(), seed, (limit, s) => {
          fc.pre(limit !== 10);
          expect(runner.signature({ name: 'lister', arguments: scrambledJson({ limit }, s) }, 'proj')).not.toBe(
            runner.signature({ name: 'lister', arguments: '' }, 'proj'),
          );
        }),
        { numRuns: RUNS },
      );
    });
  });
});

describe('canonical signature (examples)', () => {
  it('matches the documented shape', () => {
    expect(sig('{ "maxBytes": 10, "path": "a" }', 'read_file', 'default')).toBe('["read_file","",{"maxBytes":10,"path":"a"},"default"]');
    expect(sig('{"path":"a","maxBytes":10}', 'read_file', 'default')).toBe(sig('{ "maxBytes": 10, "path": "a" }', 'read_file', 'default'));
  });

  it('keeps strings as given (no Unicode normalization, no trimming) but reads JSON escapes', () => {
    expect(sig('{"q":"é"}')).not.toBe(sig('{"q":"e\u0301"}'));
    expect(sig('{"q":"a "}')).not.toBe(sig('{"q":"a"}'));
    expect(sig('{"q":"\\u00e9"}')).toBe(sig('{"q":"é"}'));
  });

  it('reads numbers by value', () => {
    expect(sig('{"n":1.0}')).toBe(sig('{"n":1}'));
    expect(sig('{"n":1e2}')).toBe(sig('{"n":100}'));
    expect(sig('{"n":-0}')).toBe(sig('{"n":0}'));
    expect(sig('{"n":"1"}')).not.toBe(sig('{"n":1}'));
  });
});

describe('parseToolArguments', () => {
  it.each(['', ' ', '\n\t'])('reads %j as {}', (raw) => {
    expect(parseToolArguments(raw)).toEqual({ ok: true, value: {} });
  });

  it.each(['[1]', '"x"', 'null', '42', 'true', '{', '{"a":1', '{"a":1}}', 'undefined', '{\'a\':1}'])('refuses %s', (raw) => {
    expect(parseToolArguments(raw).ok).toBe(false);
  });

  it('refuses cycles and BigInt in object arguments', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.me = cyclic;
    expect(parseToolArguments(cyclic).ok).toBe(false);
    expect(parseToolArguments({ n: 1n }).ok).toBe(false);
  });

  it('returns a fresh copy of object arguments', () => {
    const input = { a: { b: 1 } };
    const parsed = parseToolArguments(input);
    expect(parsed.ok && parsed.value).toEqual(input);
    expect(parsed.ok && parsed.value.a).not.toBe(input.a);
  });

  it('keeps "__proto__" as data, never as a prototype', () => {
    const parsed = parseToolArguments('{"__proto__":{"polluted":true}}');
    expect(parsed.ok).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(sig('{"__proto__":{"x":1}}')).not.toBe(sig('{}'));
  });
});
