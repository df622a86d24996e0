import { decodeCompacted, encodeCompacted, type CompactedEvent } from './compacted-row';

const env = { requestId: 'r-1', conversationId: 'c-1', projectId: 'p' };

describe('compacted row encoding', () => {
  it('gives back every event exactly, envelope and seq included', () => {
    const events: CompactedEvent[] = [
      { seq: 1, type: 'start', data: { ...env, seq: 1, model: 'm' } },
      { seq: 3, type: 'chunk', data: { ...env, seq: 3, content: 'Hello', compacted: true, throughSeq: 9 } },
      // an event without the envelope or its seq, and one whose projectId differs
      { seq: 10, type: 'ping', data: { note: 'bare' } },
      { seq: 11, type: 'done', data: { ...env, projectId: 'other', seq: 11, fullContent: 'Hello' } },
    ];
    const text = encodeCompacted(events);
    expect(decodeCompacted(text)).toEqual(events);
    // the envelope is written once, not per event
    expect(text.split('r-1').length - 1).toBe(1);
  });

  it('reads the rows compacted before (a jsonb array of {s, t, d})', () => {
    expect(decodeCompacted([{ s: 2, t: 'chunk', d: { content: 'x', seq: 2 } }])).toEqual([{ seq: 2, type: 'chunk', data: { content: 'x', seq: 2 } }]);
  });
});
