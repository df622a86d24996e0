import { interruptedCall, takeoverPointOf } from './resume-plan';
import type { StoredRunEvent } from './repositories/run-event.repository';

const ev = (seq: number, type: string, phaseIndex: number, extra: Record<string, unknown> = {}): StoredRunEvent => ({ seq, type, data: { seq, phaseIndex, ...extra } });

describe('where a run taken over continues (issue 44)', () => {
  const before = [ev(1, 'start', 0), ev(2, 'chunk', 1, { content: 'Looking. ' }), ev(3, 'tool_progress', 2, { action: 'calling', tool: 'list_files' }), ev(4, 'tool_progress', 2, { action: 'completed', tool: 'list_files' })];

  it('supersedes what the dead instance streamed past the checkpoint, and keeps the text up to it', () => {
    const events = [...before, ev(5, 'phase', 3, { status: 'start' }), ev(6, 'chunk', 3, { content: 'The pa' })];
    expect(takeoverPointOf(events, 2)).toMatchObject({ lastSeq: 6, priorContent: 'Looking. ', supersedesFromSeq: 5 });
    expect(takeoverPointOf(before, 2).supersedesFromSeq).toBeUndefined();
  });

  it('a second takeover reads past the first one’s superseded events', () => {
    const events = [...before, ev(5, 'chunk', 3, { content: 'The pa' }), ev(6, 'start', 3, { takeover: true, supersedesFromSeq: 5 }), ev(7, 'chunk', 3, { content: 'The page' })];
    expect(takeoverPointOf(events, 2)).toMatchObject({ priorContent: 'Looking. ', supersedesFromSeq: 7 });
    expect(takeoverPointOf(events, 3)).toMatchObject({ priorContent: 'Looking. The page' });
  });

  it('a call started after the checkpoint is interrupted (never run again); one before it is not', () => {
    expect(interruptedCall(before, 2)).toBeUndefined();
    expect(interruptedCall([...before, ev(5, 'tool_progress', 4, { action: 'calling', tool: 'fetch_page' })], 2)).toBe('fetch_page');
  });
});
