import type { LlmStreamEvent } from './llm-adapter.port';
import { coalesceDeltas } from './coalesce-deltas';

const text = (t: string): LlmStreamEvent => ({ type: 'text-delta', text: t });
const reasoning = (t: string): LlmStreamEvent => ({ type: 'reasoning-delta', text: t });
const call: LlmStreamEvent = { type: 'tool-call-delta', index: 0, id: 'c1', name: 'f', argumentsFragment: '{}' };

describe('coalesceDeltas (the deltas of one read of a model body)', () => {
  it('joins adjacent text deltas into one, and adjacent reasoning deltas into one', () => {
    expect([...coalesceDeltas([text('Hel'), text('lo'), text(' you')])]).toEqual([text('Hello you')]);
    expect([...coalesceDeltas([reasoning('a'), reasoning('b'), text('c'), text('d')])]).toEqual([reasoning('ab'), text('cd')]);
  });

  it('never joins across another event: a tool-call fragment, a finish or the other kind of delta keeps its place', () => {
    const finish: LlmStreamEvent = { type: 'finish', reason: 'stop' };
    expect([...coalesceDeltas([text('a'), call, text('b'), text('c'), reasoning('r'), text('d'), finish])]).toEqual([text('a'), call, text('bc'), reasoning('r'), text('d'), finish]);
  });

  it('hands a lone delta on as it came (an idle server: one delta per read), and an empty read as nothing', () => {
    const lone = text('x');
    const [out] = [...coalesceDeltas([lone])];
    expect(out).toBe(lone);
    expect([...coalesceDeltas([])]).toEqual([]);
  });

  it('reads lazily: the event after a run of deltas is not asked for before the run is handed out', () => {
    const asked: string[] = [];
    function* source(): Generator<LlmStreamEvent> {
      asked.push('a');
      yield text('a');
      asked.push('call');
      yield call;
      asked.push('b');
      yield text('b');
    }
    const it = coalesceDeltas(source());
    expect(it.next().value).toEqual(text('a'));
    expect(asked).toEqual(['a', 'call']);
    expect(it.next().value).toEqual(call);
    expect(asked).toEqual(['a', 'call']);
  });
});
