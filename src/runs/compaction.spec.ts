import { compactRun, foldChunks, type ChunkRow } from './compaction';
import { unpack } from './repositories/run-event-rows';
import { TurnStepsRecorder } from './turn-steps';
import { liveEvents, textUpTo } from './fork-prefix';

const env = (seq: number, phaseIndex: number) => ({ requestId: 'r', seq, phase: phaseIndex % 2 ? 'action_phase' : 'complete', phaseIndex, cycleIndex: 0 });
const chunk = (seq: number, phaseIndex: number, content: string) => ({ ...env(seq, phaseIndex), content });
const packed = (id: string, seq: number, phaseIndex: number, parts: string[]): ChunkRow => ({ id, seq, lastSeq: seq + parts.length - 1, data: parts.map((c, i) => chunk(seq + i, phaseIndex, c)) });
const single = (id: string, seq: number, phaseIndex: number, content: string): ChunkRow => ({ id, seq, lastSeq: null, data: chunk(seq, phaseIndex, content) });

describe('foldChunks', () => {
  it('folds each phase into the row of its first chunk, at that seq, with the whole text', () => {
    const rows = [packed('1', 3, 1, ['Hel', 'lo']), single('2', 5, 1, ', '), packed('3', 6, 1, ['wor', 'ld']), packed('4', 12, 2, ['Bye', '.'])];
    const fold = foldChunks(rows);
    expect(fold.rewrite).toEqual([
      { id: '1', data: { ...env(3, 1), content: 'Hello, world', compacted: true, throughSeq: 7 } },
      { id: '4', data: { ...env(12, 2), content: 'Bye.', compacted: true, throughSeq: 13 } },
    ]);
    expect(fold.remove.sort()).toEqual(['2', '3']);
    expect(fold.insert).toEqual([]);
    expect([fold.chunksBefore, fold.chunksAfter]).toEqual([7, 2]);
  });

  it('keeps the text every reader rebuilds: the answer up to any phase is the same before and after', () => {
    const rows = [packed('1', 2, 1, ['a', 'b']), single('2', 4, 1, 'c'), packed('3', 9, 3, ['d', 'e', 'f']), single('4', 20, 5, 'g')];
    const before = rows.flatMap((r) => (r.lastSeq === null ? [{ seq: r.seq, type: 'chunk', data: r.data as Record<string, unknown> }] : (r.data as Array<Record<string, unknown>>).map((data, i) => ({ seq: r.seq + i, type: 'chunk', data }))));
    const fold = foldChunks(rows);
    const after = fold.rewrite.map((w) => ({ seq: Number(w.data.seq), type: 'chunk', data: w.data }));
    for (const phase of [0, 1, 2, 3, 4, 5, Infinity]) expect(textUpTo(after, phase)).toBe(textUpTo(before, phase));
  });

  it('rows in any order; a phase whose first chunk sits inside another phase’s row gets a row of its own', () => {
    const mixed: ChunkRow = { id: '9', seq: 1, lastSeq: 2, data: [chunk(1, 1, 'x'), chunk(2, 2, 'y')] };
    const fold = foldChunks([single('8', 3, 2, 'z'), mixed]);
    expect(fold.rewrite).toEqual([{ id: '9', data: { ...env(1, 1), content: 'x', compacted: true, throughSeq: 1 } }]);
    expect(fold.insert).toEqual([{ seq: 2, data: { ...env(2, 2), content: 'yz', compacted: true, throughSeq: 3 } }]);
    expect(fold.remove).toEqual(['8']);
  });

  it('a run without chunks folds to nothing', () => {
    expect(foldChunks([])).toEqual({ rewrite: [], remove: [], insert: [], chunksBefore: 0, chunksAfter: 0 });
  });
});

describe('compactRun', () => {
  const ev = (seq: number, type: string, phaseIndex: number, extra: Record<string, unknown> = {}) => ({ id: `e${seq}`, seq, last_seq: null, type, data: { ...env(seq, phaseIndex), ...extra } });
  const rows = [
    ev(1, 'start', 0),
    ev(2, 'phase', 1, { status: 'start' }),
    { ...packed('p3', 3, 1, ['Look', 'ing ']), last_seq: 4, type: 'chunks' },
    ev(5, 'tool_calls', 1, { calls: [{ id: 'c1', name: 't', arguments: '{}' }] }),
    ev(6, 'phase', 1, { status: 'end', reason: 'tool_call' }),
    { ...single('s7', 7, 3, 'Done'), last_seq: null, type: 'chunk' },
    { ...packed('p8', 8, 3, ['.', '!']), last_seq: 9, type: 'chunks' },
    ev(10, 'done', 3, { stopReason: 'final_answer' }),
  ];
  const before = rows.flatMap((r) => unpack(r));

  it('one row of the run’s events: every event but its chunks as stored, one chunk per phase at its first seq', () => {
    const c = compactRun(rows)!;
    expect([c.seq, c.lastSeq, c.type, c.chunksBefore, c.chunksAfter]).toEqual([1, 10, 'events', 5, 2]);
    expect(c.createdAt).toBeNull();
    const timed = compactRun(rows.map((r, i) => ({ ...r, created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 10 - i)) })))!;
    expect(timed.createdAt).toBe('2026-01-01T00:00:03.000Z');
    expect(c.events.map((e) => e.seq)).toEqual([1, 2, 3, 5, 6, 7, 10]);
    expect(c.events.filter((e) => e.type !== 'chunk')).toEqual(before.filter((e) => e.type !== 'chunk'));
    expect(c.events.filter((e) => e.type === 'chunk').map((e) => e.data.content)).toEqual(['Looking ', 'Done.!']);
    // read back as stored: the same events
    const stored = unpack({ seq: c.seq, last_seq: c.lastSeq, type: c.type, data: c.events.map((e) => ({ s: e.seq, t: e.type, d: e.data })) });
    expect(stored).toEqual(c.events);
    for (const phase of [0, 1, 2, 3, Infinity]) expect(textUpTo(stored, phase)).toBe(textUpTo(before, phase));
    expect(TurnStepsRecorder.fromStored(stored)).toEqual(TurnStepsRecorder.fromStored(before));
  });

  it('a taken-over run (issue 44): the phase cut short folds apart from its continuation, so the answer read back is the continued one', () => {
    const takenOver = [
      ...rows.slice(0, 5),
      // A streamed part of phase 3, then died; B's start supersedes it from seq 7 and runs phase 3 again
      { ...single('s7', 7, 3, 'Do'), last_seq: null, type: 'chunk' },
      ev(8, 'start', 3, { takeover: true, supersedesFromSeq: 7 }),
      { ...packed('p9', 9, 3, ['Done', '.']), last_seq: 10, type: 'chunks' },
      ev(11, 'done', 3, { stopReason: 'final_answer' }),
    ];
    const raw = takenOver.flatMap((r) => unpack(r));
    expect(textUpTo(raw, Infinity)).toBe('Looking Done.');
    const c = compactRun(takenOver)!;
    expect(c.events.filter((e) => e.type === 'chunk').map((e) => [e.seq, e.data.content])).toEqual([
      [3, 'Looking '],
      [7, 'Do'],
      [9, 'Done.'],
    ]);
    expect(textUpTo(c.events, Infinity)).toBe('Looking Done.');
    expect(TurnStepsRecorder.fromStored(liveEvents(c.events))).toEqual(TurnStepsRecorder.fromStored(liveEvents(raw)));
  });

  it('nothing to do for a run without rows or already compacted', () => {
    const c = compactRun(rows)!;
    expect(compactRun([])).toBeNull();
    expect(compactRun([{ id: 'x', seq: c.seq, last_seq: c.lastSeq, type: 'events', data: [] }])).toBeNull();
  });
});
