import { checkpointsOf, interruptedCall, takeoverPointOf } from './resume-plan';
import type { RunEntity } from './entities/run.entity';
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

  it('a run that stored its start checkpoints each call before it runs: a call started after its latest checkpoint never ran, and is not interrupted', () => {
    const calling = [...before, ev(5, 'tool_progress', 4, { action: 'calling', tool: 'fetch_page' })];
    const older = { checkpoint: { schemaVersion: 1, byPhase: { '2': {} } } } as unknown as Pick<RunEntity, 'checkpoint'>;
    const current = { checkpoint: { schemaVersion: 1, byPhase: { '0': {}, '2': {} } } } as unknown as Pick<RunEntity, 'checkpoint'>;
    // what the protocol's checkpoint reading declares (two-stage's does), not its name
    const eachCall = { checkpointsEachCall: true };
    expect(interruptedCall(calling, 2, older, eachCall)).toBe('fetch_page');
    expect(interruptedCall(calling, 2, current, eachCall)).toBeUndefined();
    // a protocol that stores its start too, but no checkpoint as each call starts (unified): it answers started calls itself, or the run is closed
    expect(interruptedCall(calling, 2, current, {})).toBe('fetch_page');
    expect(interruptedCall(calling, 2, current)).toBe('fetch_page');
    // it is continued from the checkpoint: what the dead instance stored past it is superseded
    expect(takeoverPointOf(calling, 2).supersedesFromSeq).toBe(5);
  });

  it('a unified step that waited for a person, checkpointed at its tool phase: the calls whose approval was decided since may have run; the one still waiting has not', () => {
    const events = [
      ...before,
      ev(5, 'phase', 3, { status: 'start' }),
      ev(6, 'tool_progress', 3, { action: 'calling', tool: 'write_file', callId: 'w' }),
      ev(7, 'tool_progress', 3, { action: 'calling', tool: 'delete_file', callId: 'd' }),
      ev(8, 'approval_required', 3, { approvalId: 'aw', callId: 'w' }),
      ev(9, 'approval_required', 3, { approvalId: 'ad', callId: 'd' }),
      ev(10, 'approval_decided', 3, { approvalId: 'aw', decision: 'approve' }),
    ];
    const point = takeoverPointOf(events, 3);
    expect(point.startedCalls).toEqual(['w']);
    // nothing is superseded: the continuation goes on in the phase it waited in
    expect(point.supersedesFromSeq).toBeUndefined();
    expect(interruptedCall(events, 3)).toBeUndefined();
  });

  it('from the turn start (phase 0) the first action phase the dead instance streamed is superseded; the opening start stays', () => {
    const events = [ev(1, 'start', 0), ev(2, 'phase', 1, { status: 'start' }), ev(3, 'chunk', 1, { content: 'Hal' })];
    expect(takeoverPointOf(events, 0)).toMatchObject({ lastSeq: 3, priorContent: '', priorSteps: [], supersedesFromSeq: 2 });
    expect(takeoverPointOf([ev(1, 'start', 0)], 0).supersedesFromSeq).toBeUndefined();
  });

  it('from a checkpoint stored as a call started, what the dead instance stored after its `calling` is superseded, and kept out of the steps', () => {
    const calling = [ev(1, 'start', 0), ev(2, 'chunk', 1, { content: 'Noting. ' }), ev(3, 'phase', 2, { status: 'start', phase: 'tool_phase' }), ev(4, 'tool_progress', 2, { action: 'calling', tool: 'note', callId: 'c1' })];
    expect(takeoverPointOf(calling, 2, 'c1')).toMatchObject({ lastSeq: 4, priorContent: 'Noting. ' });
    expect(takeoverPointOf(calling, 2, 'c1').supersedesFromSeq).toBeUndefined();
    // it finished and its result was stored, but the checkpoint at the phase end was not: the continuation's result replaces it
    const finished = [...calling, ev(5, 'tool_progress', 2, { action: 'completed', tool: 'note', callId: 'c1', outcome: 'success' })];
    const point = takeoverPointOf(finished, 2, 'c1');
    expect(point).toMatchObject({ lastSeq: 5, supersedesFromSeq: 5 });
    expect(JSON.stringify(point.priorSteps)).not.toContain('completed');
  });

  it('the turn start is a checkpoint only a takeover continues from: a run lists the others', () => {
    const run = { checkpoint: { schemaVersion: 1, byPhase: { '0': {}, '4': {}, '2': {} } } } as unknown as Pick<RunEntity, 'checkpoint'>;
    expect(checkpointsOf(run)).toEqual([2, 4]);
    expect(checkpointsOf(run, true)).toEqual([0, 2, 4]);
  });

  it('names the calls started after the checkpoint (a protocol that answers them itself is told which), also those of an earlier leg cut off after the same checkpoint', () => {
    expect(takeoverPointOf(before, 2).startedCalls).toBeUndefined();
    const calling = (seq: number, callId: string) => ev(seq, 'tool_progress', 2, { action: 'calling', tool: 'send_mail', callId });
    const cut = [ev(1, 'start', 0), ev(2, 'tool_calls', 1), calling(3, 'c1'), calling(4, 'c2')];
    expect(takeoverPointOf(cut, 1)).toMatchObject({ startedCalls: ['c1', 'c2'], supersedesFromSeq: 3 });
    // taken over once from that checkpoint and cut again while c3 ran: c1 and c2 may have run too
    const twice = [...cut, ev(5, 'start', 1, { takeover: true, resumeFromPhaseIndex: 1, supersedesFromSeq: 3 }), calling(6, 'c3')];
    expect(takeoverPointOf(twice, 1).startedCalls).toEqual(['c1', 'c2', 'c3']);
    // a leg superseded by a takeover from an earlier checkpoint ran again from there: its calls are not this checkpoint's
    const earlier = [...cut, ev(5, 'start', 0, { takeover: true, resumeFromPhaseIndex: 0, supersedesFromSeq: 2 }), ev(6, 'tool_calls', 1)];
    expect(takeoverPointOf(earlier, 1).startedCalls).toBeUndefined();
  });
});
