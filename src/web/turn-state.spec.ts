/** The chat page's turn reducer (public/assets/turn-state.js), loaded as CommonJS by Jest's swc transform. */
type TurnState = Record<string, any>;
const turn = require('./public/assets/turn-state.js') as {
  createTurnState: (init?: Partial<TurnState>) => TurnState;
  applyEvent: (s: TurnState, type: string, data: Record<string, unknown>) => boolean;
  isSettled: (status: string) => boolean;
  phaseLabel: (phase: string | null) => string;
  stepLabel: (p: TurnState, tools: TurnState[], approvals?: TurnState[]) => string;
  stateFromStored: (m: Record<string, unknown>) => TurnState;
  outcomeLabel: (outcome: string | null | undefined) => string;
  turnFlow: (s: TurnState) => Array<{ kind: 'text'; text: string } | { kind: 'tools'; tools: TurnState[] }>;
};
const { createTurnState, applyEvent, isSettled, phaseLabel, stepLabel, stateFromStored, outcomeLabel, turnFlow } = turn;

const ids = { requestId: 'r1', projectId: 'default', conversationId: 'c1' };
type Ev = [string, Record<string, unknown>];

/** A two-stage turn as the server numbers it: start, action, tool phase, action, done. */
function twoStageTurn(): Ev[] {
  const evs: Array<[string, Record<string, unknown>]> = [
    ['start', { protocol: 'two-stage', phase: 'action_phase', phaseIndex: 0, cycleIndex: 0 }],
    ['phase', { status: 'start', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 }],
    ['chunk', { content: 'Looking. ', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 }],
    ['phase', { status: 'end', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, reason: 'tool_call' }],
    ['tool_calls', { calls: [{ id: 'call_1', name: 'list_files', arguments: '{}' }], phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 }],
    ['phase', { status: 'start', phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 }],
    ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'calling', isError: false, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 }],
    ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'completed', isError: false, outcome: 'success', phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 }],
    ['phase', { status: 'end', phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, reason: 'success' }],
    ['phase', { status: 'start', phase: 'action_phase', phaseIndex: 3, cycleIndex: 1 }],
    ['chunk', { content: 'Two files.', phase: 'action_phase', phaseIndex: 3, cycleIndex: 1 }],
    ['phase', { status: 'end', phase: 'action_phase', phaseIndex: 3, cycleIndex: 1, reason: 'final_answer' }],
    ['done', { fullContent: 'Looking. Two files.', stopReason: 'final_answer', messageId: 'm1', phase: 'complete', phaseIndex: 3, cycleIndex: 1 }],
  ];
  return evs.map(([type, data], i) => [type, { ...ids, seq: i + 1, ...data }]);
}

const fold = (s: TurnState, evs: Ev[]) => evs.map(([type, data]) => applyEvent(s, type, data));

describe('turn state', () => {
  it('folds a two-stage turn: phases, tool activity without output, the answer, done', () => {
    const s = createTurnState();
    fold(s, twoStageTurn());
    expect(s).toMatchObject({
      status: 'done',
      requestId: 'r1',
      conversationId: 'c1',
      protocol: 'two-stage',
      lastSeq: 13,
      content: 'Looking. Two files.',
      stopReason: 'final_answer',
      messageId: 'm1',
      duplicates: 0,
      gaps: 0,
      contentMismatch: false,
    });
    expect(s.phases.map((p: TurnState) => `${p.phaseIndex}:${p.phase}:${p.ended}:${p.reason}`)).toEqual([
      '1:action_phase:true:tool_call',
      '2:tool_phase:true:success',
      '3:action_phase:true:final_answer',
    ]);
    // the call belongs to the action phase that called it (its tool_calls event)
    // and sits after the text streamed before it ("Looking. ")
    expect(s.tools).toEqual([{ callId: 'call_1', name: 'list_files', status: 'completed', isError: false, outcome: 'success', hasOutput: false, phaseIndex: 1, textOffset: 9 }]);
    expect(turnFlow(s).map((p) => (p.kind === 'text' ? p.text : p.tools.map((t) => t.name)))).toEqual(['Looking. ', ['list_files'], 'Two files.']);
  });

  it('draws text and tool rows in the order they happened, live and stored alike', () => {
    const s = createTurnState();
    applyEvent(s, 'chunk', { ...ids, seq: 1, content: 'Let me look at the files first.' });
    applyEvent(s, 'tool_calls', { ...ids, seq: 2, calls: [{ id: 'a', name: 'list_files' }, { id: 'b', name: 'read_file' }] });
    applyEvent(s, 'chunk', { ...ids, seq: 3, content: ' Found two. Reading the roadmap.' });
    applyEvent(s, 'tool_calls', { ...ids, seq: 4, calls: [{ id: 'c', name: 'read_file' }] });
    applyEvent(s, 'chunk', { ...ids, seq: 5, content: ' It has one item.' });
    const parts = (st: TurnState) => turnFlow(st).map((p) => (p.kind === 'text' ? p.text : p.tools.map((t) => t.callId).join('+')));
    expect(parts(s)).toEqual(['Let me look at the files first.', 'a+b', ' Found two. Reading the roadmap.', 'c', ' It has one item.']);
    const stored = stateFromStored({
      content: s.content,
      status: 'complete',
      requestId: 'r1',
      steps: s.tools.map((t: TurnState) => ({ type: 'tool', callId: t.callId, name: t.name, status: 'completed', textOffset: t.textOffset })),
    });
    expect(parts(stored)).toEqual(parts(s));
    // an answer stored before offsets were kept: its tools before the text, as before
    const old = stateFromStored({ content: 'Answer.', status: 'complete', requestId: 'r2', steps: [{ type: 'tool', callId: 'x', name: 'list_files', status: 'completed' }] });
    expect(parts(old)).toEqual(['x', 'Answer.']);
    // a turn without tools is its text
    expect(parts(createTurnState({ content: 'Just text.' }))).toEqual(['Just text.']);
  });

  it('a tool phase whose call waits for approval says so, not "Ran"', () => {
    const tools = [{ callId: 'c1', name: 'read_file', status: 'calling', phaseIndex: 1 }];
    const p = { phaseIndex: 2, phase: 'tool_phase', ended: false };
    expect(stepLabel(p, tools, [{ approvalId: 'a1', callId: 'c1', status: 'pending' }])).toBe('Waiting for approval: read_file');
    expect(stepLabel(p, tools, [{ approvalId: 'a1', callId: 'c1', status: 'approved' }])).toBe('Ran read_file');
    expect(stepLabel(p, tools)).toBe('Ran read_file');
  });

  it('applies each seq once: a replay after a reconnect adds nothing twice', () => {
    const evs = twoStageTurn();
    const s = createTurnState();
    fold(s, evs.slice(0, 5));
    // the events route replays from the last seq the client saw, or (worst case) from earlier
    const applied = fold(s, evs.slice(2));
    expect(applied.filter((a) => !a)).toHaveLength(3);
    expect(s.content).toBe('Looking. Two files.');
    expect(s.tools).toHaveLength(1);
    expect(s.phases).toHaveLength(3);
    expect({ duplicates: s.duplicates, gaps: s.gaps, contentMismatch: s.contentMismatch }).toEqual({ duplicates: 3, gaps: 0, contentMismatch: false });
  });

  it('counts missing seqs and lets done.fullContent (the stored answer) win', () => {
    const evs = twoStageTurn().filter(([, d]) => d.seq !== 11); // "Two files." never arrived
    const s = createTurnState();
    fold(s, evs);
    expect(s.gaps).toBe(1);
    expect(s.contentMismatch).toBe(true);
    expect(s.content).toBe('Looking. Two files.');
  });

  it('pauses, keeps Stop/Pause intents as the live status, and resumes with the next seq', () => {
    const evs = twoStageTurn();
    const s = createTurnState();
    fold(s, evs.slice(0, 6));
    s.intent = 'pause';
    fold(s, evs.slice(6, 9));
    expect(s.status).toBe('pausing');
    applyEvent(s, 'paused', { ...ids, seq: 10, resumeFromPhaseIndex: 2, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 });
    expect(s).toMatchObject({ status: 'paused', intent: null, resumeFromPhaseIndex: 2 });
    expect(isSettled(s.status)).toBe(true);
    s.status = 'resuming';
    applyEvent(s, 'start', { ...ids, seq: 11, protocol: 'two-stage', resumed: true, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 });
    expect(s.status).toBe('streaming');
    applyEvent(s, 'chunk', { ...ids, seq: 12, content: 'More.' });
    s.intent = 'stop';
    applyEvent(s, 'chunk', { ...ids, seq: 13, content: '..' });
    expect(s.status).toBe('stopping');
    applyEvent(s, 'done', { ...ids, seq: 14, stopReason: 'cancelled', fullContent: 'Looking. More...', messageId: 'm2' });
    expect(s).toMatchObject({ status: 'stopped', intent: null, content: 'Looking. More...', contentMismatch: false });
  });

  it('keeps tool output only when the server sent it (debugShowToolResults), and tool_phase messages', () => {
    const s = createTurnState();
    applyEvent(s, 'tool_progress', { ...ids, seq: 1, tool: 'rag_query', callId: 'c9', action: 'calling', isError: false });
    applyEvent(s, 'tool_phase', { ...ids, seq: 2, toolId: 'rag_query', stage: 'search', message: 'Searching the knowledge base…' });
    applyEvent(s, 'tool_progress', { ...ids, seq: 3, tool: 'rag_query', callId: 'c9', action: 'failed', isError: true, outcome: 'timeout', output: { error: 'slow' } });
    expect(s.tools).toEqual([
      { callId: 'c9', name: 'rag_query', status: 'failed', isError: true, outcome: 'timeout', detail: 'Searching the knowledge base…', output: { error: 'slow' }, hasOutput: true, textOffset: 0 },
    ]);
  });

  it('maps stop reasons to end states and survives unknown events and junk', () => {
    for (const [stopReason, status] of [['error', 'failed'], ['cycle_budget', 'done'], ['duplicate_limit', 'done']]) {
      const s = createTurnState();
      applyEvent(s, 'error', { ...ids, seq: 1, code: 'llm_timeout', message: 'slow model', retryable: true });
      applyEvent(s, 'brand_new_event', { ...ids, seq: 2, phase: 'action_phase', phaseIndex: 4, cycleIndex: 2 });
      expect(applyEvent(s, 'chunk', null as unknown as Record<string, unknown>)).toBe(false);
      applyEvent(s, 'done', { ...ids, seq: 3, stopReason, fullContent: '' });
      expect(s.status).toBe(status);
      expect(s.phaseIndex).toBe(4);
      expect(s.error).toEqual({ code: 'llm_timeout', message: 'slow model', retryable: true });
    }
  });

  it('labels each step by what it did: the tools a phase called or ran, else Answer (live and stored alike)', () => {
    const s = createTurnState();
    for (const [type, data] of twoStageTurn()) applyEvent(s, type, { ...ids, ...data });
    expect(s.phases.map((p: TurnState) => stepLabel(p, s.tools))).toEqual(['Called list_files', 'Ran list_files', 'Answer']);

    // a unified step with two calls; a refused duplicate in the next step never ran
    const stored = stateFromStored({
      content: 'x',
      status: 'complete',
      requestId: 'r2',
      steps: [
        { type: 'phase', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, endReason: 'tool_calls' },
        { type: 'tool', callId: 'a', name: 'list_files', status: 'completed', phaseIndex: 1 },
        { type: 'tool', callId: 'b', name: 'read_file', status: 'completed', phaseIndex: 1 },
        { type: 'phase', phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, endReason: 'success' },
        { type: 'phase', phase: 'action_phase', phaseIndex: 3, cycleIndex: 1, endReason: 'final_answer' },
        { type: 'tool', callId: 'c', name: 'read_file', status: 'refused', phaseIndex: 3 },
      ],
    });
    expect(stored.phases.map((p: TurnState) => stepLabel(p, stored.tools))).toEqual(['Called list_files, read_file', 'Ran list_files, read_file', 'Answer']);
    // a step still streaming is the answer until it calls a tool; calls of unknown phase: "tools"
    expect(stepLabel({ phaseIndex: 1, phase: 'action_phase', ended: false }, [])).toBe('Answer');
    expect(stepLabel({ phaseIndex: 2, phase: 'tool_phase', ended: false }, [{ name: 'x', status: 'calling' }])).toBe('Ran tools');
  });

  it('says a tool stopped by a cancel was cancelled, not that it failed', () => {
    expect(outcomeLabel('cancelled')).toBe('cancelled');
    expect(outcomeLabel('exception')).toBe('failed');
    expect(outcomeLabel(undefined)).toBe('failed');
  });

  it('names phases for people', () => {
    expect(['action_phase', 'tool_phase', 'complete', null].map(phaseLabel)).toEqual(['Answering', 'Running tools', 'Complete', 'Starting']);
  });

  it('a queued message shows as queued with its place, then streams as any turn once it starts (issue 33)', () => {
    const s = createTurnState();
    const queued = { ...ids, seq: 0, phase: 'action_phase', phaseIndex: 0, cycleIndex: 0, activeRequestId: 'r0' };
    expect(applyEvent(s, 'queued', { ...queued, position: 2 })).toBe(true);
    expect(s).toMatchObject({ status: 'queued', queuePosition: 2, requestId: 'r1', lastSeq: 0, duplicates: 0 });
    applyEvent(s, 'queued', { ...queued, position: 1 });
    expect(s.queuePosition).toBe(1);
    fold(s, twoStageTurn());
    expect(s).toMatchObject({ status: 'done', queuePosition: null, content: 'Looking. Two files.', gaps: 0, duplicates: 0 });
  });

  it('a queued message stopped before it started ends stopped on its unnumbered done', () => {
    const s = createTurnState();
    const envelope = { ...ids, seq: 0, phaseIndex: 0, cycleIndex: 0 };
    applyEvent(s, 'queued', { ...envelope, phase: 'action_phase', position: 1, activeRequestId: 'r0' });
    expect(applyEvent(s, 'done', { ...envelope, phase: 'complete', fullContent: '', messageId: null, stopReason: 'cancelled' })).toBe(true);
    expect(s).toMatchObject({ status: 'stopped', stopReason: 'cancelled' });
    expect(isSettled(s.status)).toBe(true);
  });
});

describe('a turn continued on another instance (issue 44)', () => {
  it("drops the text streamed from the takeover start's supersedesFromSeq, then shows the continuation once", () => {
    const s = createTurnState();
    const env = { ...ids, phase: 'action_phase', phaseIndex: 3, cycleIndex: 1 };
    applyEvent(s, 'start', { ...env, seq: 1, protocol: 'two-stage', phaseIndex: 0 });
    applyEvent(s, 'chunk', { ...env, seq: 2, content: 'Looking. ', phaseIndex: 1 });
    applyEvent(s, 'chunk', { ...env, seq: 3, content: 'The pa' });
    applyEvent(s, 'chunk', { ...env, seq: 4, content: 'ge' });
    applyEvent(s, 'start', { ...env, seq: 5, protocol: 'two-stage', resumed: true, takeover: true, supersedesFromSeq: 3 });
    expect(s.content).toBe('Looking. ');
    applyEvent(s, 'chunk', { ...env, seq: 6, content: 'The page is slow.' });
    applyEvent(s, 'done', { ...env, seq: 7, stopReason: 'final_answer', fullContent: 'Looking. The page is slow.', messageId: 'm' });
    expect(s.content).toBe('Looking. The page is slow.');
    expect(s.contentMismatch).toBe(false);
    expect(s.gaps).toBe(0);
  });

  it('drops the phases, calls and notices of the cut attempt: a unified turn killed during its tool shows each once', () => {
    const s = createTurnState();
    const env = { ...ids, phase: 'action_phase', cycleIndex: 0 };
    applyEvent(s, 'start', { ...env, seq: 1, protocol: 'unified', phaseIndex: 0 });
    applyEvent(s, 'phase', { ...env, seq: 2, phaseIndex: 1, status: 'start' });
    applyEvent(s, 'tool_calls', { ...env, seq: 3, phaseIndex: 1, calls: [{ id: 'c1', name: 'fetch_page' }] });
    applyEvent(s, 'phase', { ...env, seq: 4, phaseIndex: 1, status: 'end', reason: 'tool_call' });
    // the cut attempt: its tool phase and the call's progress
    applyEvent(s, 'phase', { ...env, seq: 5, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, status: 'start' });
    applyEvent(s, 'tool_progress', { ...env, seq: 6, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, callId: 'c1', tool: 'fetch_page', action: 'calling' });
    applyEvent(s, 'notice', { ...env, seq: 7, phaseIndex: 2, code: 'slow_tool', message: 'still fetching' });
    applyEvent(s, 'start', { ...env, seq: 8, protocol: 'unified', phaseIndex: 1, resumed: true, takeover: true, supersedesFromSeq: 5 });
    applyEvent(s, 'phase', { ...env, seq: 9, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, status: 'start' });
    applyEvent(s, 'tool_progress', { ...env, seq: 10, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, callId: 'c1', tool: 'fetch_page', action: 'calling' });
    applyEvent(s, 'tool_progress', { ...env, seq: 11, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, callId: 'c1', tool: 'fetch_page', action: 'completed', outcome: 'success' });
    applyEvent(s, 'phase', { ...env, seq: 12, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, status: 'end', reason: 'tool_completed' });
    expect(s.phases.map((p: { phaseIndex: number; ended: boolean }) => [p.phaseIndex, p.ended])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(s.tools.map((t: { callId: string; status: string }) => [t.callId, t.status])).toEqual([['c1', 'completed']]);
    expect(s.notices).toEqual([]);
  });
});
