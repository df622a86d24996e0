import fc from 'fast-check';
import { listRecordings, loadRecording, recordingFrames, type Recording } from '../../test/support/llm-recordings';
import { OllamaChunkMapper } from './adapters/ollama-chunk.mapper';
import { OpenAiChunkMapper } from './adapters/openai-chunk.mapper';
import type { LlmStreamEvent } from './llm-adapter.port';
import { ToolCallAccumulator, type CompletedToolCall } from './tool-call-accumulator';

type Delta = Extract<LlmStreamEvent, { type: 'tool-call-delta' }>;

/** The recording's normalized events, read without HTTP (the adapters' own mappers). */
function eventsOf(rec: Recording): LlmStreamEvent[] {
  if (rec.format === 'ndjson') {
    const m = new OllamaChunkMapper();
    return [...rec.payloads.flatMap((p) => m.mapObject(p)), ...m.end()];
  }
  const m = new OpenAiChunkMapper();
  return [...recordingFrames(rec).flatMap((f) => ('data' in f ? m.mapMessage(f) : [])), ...m.end()];
}

/** What a call IS, independently of the accumulator: group by index, first id/name, concatenated arguments. */
interface TruthCall {
  id: string;
  name: string;
  args: string;
}
function truthOf(deltas: Delta[]): TruthCall[] {
  const calls: TruthCall[] = [];
  for (const d of deltas) {
    const c = (calls[d.index] ??= { id: '', name: '', args: '' });
    if (!c.id && d.id) c.id = d.id;
    if (!c.name && d.name) c.name = d.name;
    c.args += d.argumentsFragment;
  }
  return calls;
}

const simplify = (calls: readonly CompletedToolCall[]) => calls.map((c) => ({ id: c.id, name: c.name, args: c.args }));
const expected = (truth: TruthCall[]) => truth.map((t) => ({ id: t.id, name: t.name, args: JSON.parse(t.args || '{}') }));

const WITH_TOOL_CALLS = listRecordings()
  .map(loadRecording)
  .map((rec) => ({ rec, deltas: eventsOf(rec).filter((e): e is Delta => e.type === 'tool-call-delta') }))
  .filter((r) => r.deltas.length > 0);

/** Re-splits every call's arguments at the given cut points, the way another provider might stream them. */
function fragment(
  truth: TruthCall[],
  cuts: number[][],
  style: { withIndex: boolean; separateHeader: boolean; qwenNoise: boolean },
): { events: LlmStreamEvent[]; firstEventOfCall: number[] } {
  const events: LlmStreamEvent[] = [];
  const firstEventOfCall: number[] = [];
  truth.forEach((call, index) => {
    const points = [...new Set(cuts[index].map((c) => c % (call.args.length + 1)))].sort((a, b) => a - b);
    const pieces: string[] = [];
    let prev = 0;
    for (const p of [...points, call.args.length]) {
      if (p > prev) pieces.push(call.args.slice(prev, p));
      prev = Math.max(prev, p);
    }
    if (pieces.length === 0) pieces.push('');
    const idx = style.withIndex ? { index } : {};
    firstEventOfCall.push(events.length);
    if (style.separateHeader) {
      events.push({ type: 'tool-call-delta', ...(idx as { index: number }), id: call.id, name: call.name, argumentsFragment: '' });
    }
    pieces.forEach((piece, i) => {
      const head = i === 0 && !style.separateHeader ? { id: call.id, name: call.name } : style.qwenNoise ? { id: '', name: '' } : {};
      events.push({ type: 'tool-call-delta', ...(idx as { index: number }), ...head, argumentsFragment: piece });
      if (i % 3 === 1) events.push({ type: 'text-delta', text: 'noise' }); // other events never disturb the merge
    });
  });
  events.push({ type: 'finish', reason: 'tool_calls' });
  return { events, firstEventOfCall };
}

describe('ToolCallAccumulator', () => {
  it('has recordings with tool calls to work on', () => {
    expect(WITH_TOOL_CALLS.length).toBeGreaterThanOrEqual(10);
  });

  describe.each(WITH_TOOL_CALLS.map((r) => [r.rec.name, r] as const))('%s', (_name, { deltas }) => {
    const truth = truthOf(deltas);

    it('merges the recorded deltas into the recorded calls, complete only at finish or at the next call', () => {
      const acc = new ToolCallAccumulator();
      deltas.forEach((d) => acc.push(d));
      // Before finish only the calls followed by another call have passed a boundary.
      expect(acc.completed).toHaveLength(truth.length - 1);
      acc.finish();
      expect(simplify(acc.completed)).toEqual(expected(truth));
      expect(acc.invalid).toEqual([]);
    });

    it('merges 1-character fragments into the same calls', () => {
      const cuts = truth.map((t) => Array.from({ length: t.args.length + 1 }, (_, i) => i));
      const { events } = fragment(truth, cuts, { withIndex: true, separateHeader: false, qwenNoise: true });
      const acc = new ToolCallAccumulator();
      events.forEach((e) => acc.push(e));
      expect(simplify(acc.completed)).toEqual(expected(truth));
    });

    it('merges any re-fragmentation into the same calls (property, 100 runs)', () => {
      fc.assert(
        fc.property(
          fc.tuple(...truth.map(() => fc.array(fc.nat({ max: 400 }), { maxLength: 40 }))),
          fc.boolean(),
          fc.boolean(),
          fc.boolean(),
          (cuts, withIndex, separateHeader, qwenNoise) => {
            const { events, firstEventOfCall } = fragment(truth, cuts, { withIndex, separateHeader, qwenNoise });
            const acc = new ToolCallAccumulator();
            events.forEach((e, i) => {
              const done = acc.push(e);
              for (const call of done) {
                // Complete exactly at a boundary: the first fragment of the next call, or finish.
                const boundary = call.index + 1 < truth.length ? firstEventOfCall[call.index + 1] : events.length - 1;
                expect(i).toBe(boundary);
              }
            });
            expect(simplify(acc.completed)).toEqual(expected(truth));
            expect(acc.invalid).toEqual([]);
          },
        ),
        { numRuns: 100 },
      );
    });
  });

  describe('malformed and truncated streams', () => {
    const FRAGMENTS = ['{', '}', '"a"', ':', '1', ',', '"b":2', '[1]', '"x"', 'null', '{"a":1}', '{}', ' ', '\\', '"', '{"a":', 'true', ']'];
    const fragmentArb = fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 8 }), fc.json({ maxDepth: 2 }));
    const deltaArb = fc.record(
      {
        type: fc.constant('tool-call-delta'),
        index: fc.oneof(fc.integer({ min: -2, max: 4 }), fc.constant(Number.NaN), fc.constant('1'), fc.constant(undefined)),
        id: fc.oneof(fc.constantFrom('', 'call_a', 'call_b', 'call_c'), fc.constant(undefined), fc.integer()),
        name: fc.oneof(fc.constantFrom('', 'f', 'g', '  '), fc.constant(undefined), fc.constant(null)),
        argumentsFragment: fc.oneof(fragmentArb, fc.constant(undefined), fc.integer(), fc.constant(null)),
      },
      { requiredKeys: ['type'] },
    );
    const eventArb = fc.oneof(
      { weight: 6, arbitrary: deltaArb },
      { weight: 1, arbitrary: fc.constant({ type: 'finish', reason: 'stop' }) },
      { weight: 1, arbitrary: fc.constant({ type: 'text-delta', text: 'x' }) },
      { weight: 1, arbitrary: fc.anything() },
    );

    /** The invariants no input may break. */
    function check(events: unknown[]): void {
      const acc = new ToolCallAccumulator();
      const reported: CompletedToolCall[] = [];
      for (const e of events) reported.push(...acc.push(e));
      reported.push(...acc.finish());
      for (const call of reported) {
        expect(typeof call.name).toBe('string');
        expect(call.name.trim()).not.toBe('');
        const parsed: unknown = JSON.parse(call.arguments);
        expect(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)).toBe(true);
        expect(parsed).toEqual(call.args);
        expect(call.id).not.toBe('');
      }
      expect(new Set(reported.map((c) => c.index)).size).toBe(reported.length);
      expect(acc.completed).toHaveLength(reported.length);
      expect(acc.pendingCount).toBe(0);
      for (const bad of acc.invalid) {
        expect(typeof bad.rawArguments).toBe('string');
        expect(bad.error).not.toBe('');
      }
    }

    it('never crashes and never completes a call with non-object arguments (1,000 random streams)', () => {
      fc.assert(
        fc.property(fc.array(eventArb, { maxLength: 30 }), (events) => {
          expect(() => check(events)).not.toThrow();
        }),
        { numRuns: 1000 },
      );
    });

    it('handles recordings cut anywhere, with garbage appended (500 runs)', () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...WITH_TOOL_CALLS),
          fc.nat(),
          fc.array(deltaArb, { maxLength: 3 }),
          ({ deltas }, cut, garbage) => {
            check([...deltas.slice(0, cut % (deltas.length + 1)), ...garbage]);
          },
        ),
        { numRuns: 500 },
      );
    });

    it('reports non-object JSON, unparseable text and missing names as invalid, with the raw text', () => {
      const acc = new ToolCallAccumulator();
      acc.push({ type: 'tool-call-delta', index: 0, id: 'a', name: 'f', argumentsFragment: '[1]' });
      acc.push({ type: 'tool-call-delta', index: 1, id: 'b', name: 'g', argumentsFragment: '"x"' });
      acc.push({ type: 'tool-call-delta', index: 2, id: 'c', name: 'h', argumentsFragment: '{"a":' });
      acc.push({ type: 'tool-call-delta', index: 3, id: 'd', argumentsFragment: '{}' });
      acc.finish();
      expect(acc.completed).toEqual([]);
      expect(acc.invalid.map((c) => [c.id, c.rawArguments])).toEqual([
        ['a', '[1]'],
        ['b', '"x"'],
        ['c', '{"a":'],
        ['d', '{}'],
      ]);
      expect(acc.invalid[0].error).toMatch(/not a JSON object/);
      expect(acc.invalid[2].error).toMatch(/not valid JSON/);
      expect(acc.invalid[3].error).toMatch(/missing tool name/);
    });
  });

  describe('deltas after the finish', () => {
    type Chunk = Record<string, unknown>;
    const chunk = (delta: Chunk, finish: string | null = null): Chunk => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
    const toolChunk = (index: number, fn: Chunk, id?: string): Chunk => chunk({ tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] });
    /** A call streamed as a header and argument fragments cut at the given points. */
    const callChunks = (index: number, id: string, name: string, args: string, cuts: number[]): Chunk[] => {
      const points = [...new Set(cuts.map((c) => c % (args.length + 1)))].sort((a, b) => a - b);
      const out = [toolChunk(index, { name, arguments: '' }, id)];
      let prev = 0;
      for (const p of [...points, args.length]) {
        if (p > prev) out.push(toolChunk(index, { arguments: args.slice(prev, p) }));
        prev = Math.max(prev, p);
      }
      return out;
    };
    const callArb = fc.record({
      name: fc.constantFrom('list_files', 'read_file', 'web_search'),
      args: fc.dictionary(fc.constantFrom('path', 'q', 'n'), fc.oneof(fc.string({ maxLength: 6 }), fc.integer())),
      cuts: fc.array(fc.nat({ max: 60 }), { maxLength: 5 }),
    });
    const textArb = fc.string({ minLength: 1, maxLength: 5 }).map((t) => chunk({ content: t }));

    /** The mapper's events for the chunks, then the calls the accumulator completes from them. */
    function read(chunks: Chunk[]) {
      const mapper = new OpenAiChunkMapper();
      const events = [...chunks.flatMap((c) => mapper.mapChunk(c)), ...mapper.end()];
      const acc = new ToolCallAccumulator();
      for (const e of events) acc.push(e);
      acc.finish();
      const finish = events.find((e): e is Extract<LlmStreamEvent, { type: 'finish' }> => e.type === 'finish');
      return { events, completed: acc.completed, invalid: acc.invalid, finish };
    }

    it('never completes or streams what comes after finish_reason, whatever the stream (1,000 random streams)', () => {
      fc.assert(
        fc.property(
          fc.array(fc.oneof(callArb.map((c) => ({ call: c })), textArb.map((t) => ({ text: t }))), { maxLength: 5 }),
          fc.nat(),
          fc.constantFrom('stop', 'tool_calls', 'length'),
          fc.array(fc.oneof(callArb.map((c) => ({ call: c })), textArb.map((t) => ({ text: t })), fc.constant({ empty: true })), { minLength: 1, maxLength: 4 }),
          (before, cut, reason, after) => {
            let index = 0;
            const chunksOf = (parts: typeof before | typeof after, idPrefix: string): Chunk[] => {
              const out: Chunk[] = [];
              for (const p of parts) {
                if ('call' in p) {
                  out.push(...callChunks(index, `${idPrefix}${index}`, p.call.name, JSON.stringify(p.call.args), p.call.cuts));
                  index += 1;
                } else out.push('text' in p ? p.text : chunk({ content: '' }));
              }
              return out;
            };
            const head = chunksOf(before, 'call_');
            // the finish may fall anywhere, even inside a call (whose rest then comes late)
            const at = head.length === 0 ? 0 : cut % (head.length + 1);
            const late = [...head.slice(at), ...chunksOf(after, 'late_')];
            const stream = [...head.slice(0, at), chunk({}, reason), ...late];

            const got = read(stream);
            const alone = read([...head.slice(0, at), chunk({}, reason)]);
            // the same response as if the stream had ended at its finish_reason…
            expect(got.events.filter((e) => e.type !== 'finish')).toEqual(alone.events.filter((e) => e.type !== 'finish'));
            expect(got.completed).toEqual(alone.completed);
            expect(got.invalid).toEqual(alone.invalid);
            expect(got.completed.some((c) => c.id.startsWith('late_'))).toBe(false);
            expect(got.finish).toMatchObject({ reason: alone.finish!.reason, rawReason: reason });
            // …with what came late counted on the finish
            const lateToolFragments = late.filter((c) => JSON.stringify(c).includes('tool_calls')).length;
            const lateTexts = late.filter((c) => ((c.choices as Chunk[])[0].delta as Chunk).content).length;
            if (lateToolFragments + lateTexts === 0) expect(got.finish).not.toHaveProperty('ignoredAfterFinish');
            else expect(got.finish!.ignoredAfterFinish).toEqual({ text: lateTexts, reasoning: 0, toolCalls: lateToolFragments });
          },
        ),
        { numRuns: 1000 },
      );
    });

    it('completes nothing pushed after a finish event, whatever was pushed before (1,000 random streams)', () => {
      const toolDelta = fc.record({
        type: fc.constant('tool-call-delta' as const),
        index: fc.integer({ min: 0, max: 3 }),
        id: fc.constantFrom('a', 'b', undefined),
        name: fc.constantFrom('f', 'g', undefined),
        argumentsFragment: fc.constantFrom('', '{}', '{"a":1}', '{', '}', '"x"'),
      });
      fc.assert(
        fc.property(fc.array(toolDelta, { maxLength: 8 }), fc.array(toolDelta, { minLength: 1, maxLength: 8 }), (before, after) => {
          const acc = new ToolCallAccumulator({ idFactory: (i) => `gen_${i}` });
          const alone = new ToolCallAccumulator({ idFactory: (i) => `gen_${i}` });
          for (const e of before) {
            acc.push(e);
            alone.push(e);
          }
          acc.push({ type: 'finish', reason: 'stop' });
          alone.push({ type: 'finish', reason: 'stop' });
          for (const e of after) expect(acc.push(e)).toEqual([]);
          expect(acc.completed).toEqual(alone.completed);
          expect(acc.invalid).toEqual(alone.invalid);
        }),
        { numRuns: 1000 },
      );
    });
  });

  describe('partial arguments that happen to parse (vercel/ai#13137)', () => {
    it('does not complete {"a":1} while the call is still streaming', () => {
      const acc = new ToolCallAccumulator();
      expect(acc.push({ type: 'tool-call-delta', index: 0, id: 'c1', name: 'f', argumentsFragment: '{"a":1}' })).toEqual([]);
      expect(acc.firstComplete()).toBeUndefined();
      expect(acc.push({ type: 'tool-call-delta', index: 0, argumentsFragment: ',"b":2}' })).toEqual([]);
      acc.finish();
      expect(acc.completed).toEqual([]);
      expect(acc.invalid[0].rawArguments).toBe('{"a":1},"b":2}');
    });

    it('completes it when the next call starts, or at finish', () => {
      const acc = new ToolCallAccumulator();
      acc.push({ type: 'tool-call-delta', index: 0, id: 'c1', name: 'f', argumentsFragment: '{"a":1}' });
      const done = acc.push({ type: 'tool-call-delta', index: 1, id: 'c2', name: 'g', argumentsFragment: '{"b":' });
      expect(done.map((c) => [c.id, c.args])).toEqual([['c1', { a: 1 }]]);
      expect(acc.firstComplete()?.id).toBe('c1');
      acc.push({ type: 'tool-call-delta', index: 1, argumentsFragment: '2}' });
      expect(acc.push({ type: 'finish', reason: 'tool_calls' }).map((c) => c.args)).toEqual([{ b: 2 }]);
    });

    it('treats empty arguments as {} only at the boundary', () => {
      const acc = new ToolCallAccumulator();
      expect(acc.push({ type: 'tool-call-delta', index: 0, id: 'c1', name: 'f', argumentsFragment: '' })).toEqual([]);
      expect(acc.finish().map((c) => [c.arguments, c.args])).toEqual([['{}', {}]]);
    });
  });

  describe('identity of calls', () => {
    it('never lets an empty id or name overwrite the real one (DashScope repeats id:"")', () => {
      const acc = new ToolCallAccumulator();
      acc.push({ type: 'tool-call-delta', index: 0, id: 'call_real', name: 'weather', argumentsFragment: '' });
      acc.push({ type: 'tool-call-delta', index: 0, id: '', name: '', argumentsFragment: '{"x":1}' });
      acc.finish();
      expect(simplify(acc.completed)).toEqual([{ id: 'call_real', name: 'weather', args: { x: 1 } }]);
    });

    it('splits index-less whole calls by id or by a second name (Mistral)', () => {
      const acc = new ToolCallAccumulator({ idFactory: (i) => `gen_${i}` });
      const push = (d: Record<string, unknown>) => acc.push({ type: 'tool-call-delta', ...d });
      push({ id: 'm1', name: 'a', argumentsFragment: '{"n":1}' });
      expect(push({ id: 'm2', name: 'b', argumentsFragment: '{"n":' }).map((c) => c.id)).toEqual(['m1']);
      push({ argumentsFragment: '2}' });
      push({ name: 'c', argumentsFragment: '{}' }); // no id at all: a second name starts a call
      acc.finish();
      expect(simplify(acc.completed)).toEqual([
        { id: 'm1', name: 'a', args: { n: 1 } },
        { id: 'm2', name: 'b', args: { n: 2 } },
        { id: 'gen_2', name: 'c', args: {} },
      ]);
    });

    it('keeps index-less fragments that repeat the id or the name in one call', () => {
      const acc = new ToolCallAccumulator({ idFactory: (i) => `gen_${i}` });
      const push = (d: Record<string, unknown>) => acc.push({ type: 'tool-call-delta', ...d });
      push({ id: 'r1', name: 'f', argumentsFragment: '{"q":' });
      push({ id: 'r1', name: 'f', argumentsFragment: '"x"' });
      push({ id: 'r1', name: 'f', argumentsFragment: '}' });
      push({ name: 'g', argumentsFragment: '{"a":' });
      push({ name: 'g', argumentsFragment: '1}' });
      acc.finish();
      expect(simplify(acc.completed)).toEqual([
        { id: 'r1', name: 'f', args: { q: 'x' } },
        { id: 'gen_1', name: 'g', args: { a: 1 } },
      ]);
    });

    it('treats a different id on a reused index as a new call', () => {
      const acc = new ToolCallAccumulator();
      acc.push({ type: 'tool-call-delta', index: 0, id: 'x1', name: 'a', argumentsFragment: '{}' });
      acc.push({ type: 'tool-call-delta', index: 0, id: 'x2', name: 'b', argumentsFragment: '{}' });
      acc.finish();
      expect(acc.completed.map((c) => c.id)).toEqual(['x1', 'x2']);
    });

    it('ignores everything after finish', () => {
      const acc = new ToolCallAccumulator();
      acc.finish();
      expect(acc.push({ type: 'tool-call-delta', index: 0, id: 'a', name: 'f', argumentsFragment: '{}' })).toEqual([]);
      expect(acc.sawToolCalls).toBe(false);
      expect(acc.finished).toBe(true);
    });
  });
});
