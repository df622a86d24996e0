import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { liveEvents } from '../runs/fork-prefix';
import { conversationIdForChat } from './chat-id';
import { INITIAL_UI_STREAM_STATE, type RunEventLike, toUiParts, type UiPart } from './ui-stream.mapper';

const RUN = '0f8fad5b-d9cb-469f-a165-70867728950e';
const CONV = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

/** Stored run events with their envelope, numbered as RunStream numbers them. */
function run(...events: Array<[string, Record<string, unknown>]>): RunEventLike[] {
  return events.map(([type, fields], i) => ({
    seq: i + 1,
    type,
    data: { requestId: RUN, projectId: 'default', conversationId: CONV, seq: i + 1, phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, ...fields },
  }));
}

function mapAll(events: RunEventLike[]): UiPart[] {
  let state = INITIAL_UI_STREAM_STATE;
  const parts: UiPart[] = [];
  for (const e of events) {
    const r = toUiParts(state, e);
    state = r.state;
    parts.push(...r.parts);
  }
  return parts;
}

/** The message the AI SDK's own reader builds from the parts (it refuses parts out of protocol). */
async function readByAiSdk(parts: UiPart[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(c) {
      for (const p of parts) c.enqueue(p as UIMessageChunk);
      c.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, terminateOnError: true })) last = m;
  return last!;
}

const phase = (p: string, status: string, phaseIndex: number, cycleIndex: number, reason?: string): [string, Record<string, unknown>] => [
  'phase',
  { phase: p, status, phaseIndex, cycleIndex, ...(reason && { reason }) },
];

/** A unified turn: text, a list_files call, its result, the answer. */
const toolTurn = (progress: Record<string, unknown> = {}) =>
  run(
    ['start', { protocol: 'unified', userMessageId: 'u1', model: 'scripted-model', phaseIndex: 0 }],
    phase('action_phase', 'start', 1, 0),
    ['chunk', { content: 'Let me ' }],
    ['chunk', { content: 'look.' }],
    ['tool_calls', { calls: [{ id: 'call_1', name: 'list_files', arguments: '{"path":"."}' }] }],
    phase('action_phase', 'end', 1, 0, 'tool_calls'),
    phase('tool_phase', 'start', 2, 1),
    ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'calling', params: { path: '.' }, isError: false }],
    ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'completed', params: { path: '.' }, isError: false, outcome: 'success', durationMs: 3, ...progress }],
    phase('tool_phase', 'end', 2, 1, 'success'),
    phase('action_phase', 'start', 3, 1),
    ['chunk', { content: 'There is a README.' }],
    phase('action_phase', 'end', 3, 1, 'final_answer'),
    ['done', { phase: 'complete', fullContent: 'Let me look.There is a README.', messageId: 'm1', stopReason: 'final_answer', usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3, llmCalls: 2 } }],
  );

describe('UI message stream mapper', () => {
  it('maps a tool turn to start, steps, text parts, the tool call, data parts and finish', () => {
    const parts = mapAll(toolTurn());
    expect(parts.map((p) => p.type)).toEqual([
      'start',
      'start-step', 'data-phase',
      'text-start', 'text-delta', 'text-delta',
      'text-end', 'tool-input-available',
      'data-phase',
      'data-phase',
      'data-tool-progress',
      'data-tool-progress',
      'data-phase',
      'finish-step', 'start-step', 'data-phase',
      'text-start', 'text-delta',
      'text-end', 'data-phase',
      'finish-step', 'finish',
    ]);
    expect(parts[0]).toEqual({ type: 'start', messageId: RUN, messageMetadata: { requestId: RUN, conversationId: CONV, projectId: 'default', protocol: 'unified', model: 'scripted-model', userMessageId: 'u1' } });
    expect(parts.find((p) => p.type === 'tool-input-available')).toEqual({ type: 'tool-input-available', toolCallId: 'call_1', toolName: 'list_files', input: { path: '.' }, dynamic: true, providerExecuted: true });
    expect(parts.filter((p) => p.type === 'data-tool-progress').at(-1)).toEqual({
      type: 'data-tool-progress',
      id: 'tool-call_1',
      data: { tool: 'list_files', callId: 'call_1', action: 'completed', outcome: 'success', isError: false, durationMs: 3 },
    });
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', messageMetadata: { requestId: RUN, conversationId: CONV, messageId: 'm1', stopReason: 'final_answer', usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3, llmCalls: 2 } } });
  });

  it('sends tool output only where the stream carried it (debugShowToolResults)', () => {
    expect(mapAll(toolTurn()).some((p) => p.type === 'tool-output-available')).toBe(false);
    const shown = mapAll(toolTurn({ output: { files: ['README.md'] } }));
    expect(shown.filter((p) => p.type === 'tool-output-available')).toEqual([{ type: 'tool-output-available', toolCallId: 'call_1', output: { files: ['README.md'] }, dynamic: true, providerExecuted: true }]);
  });

  it('is read by the AI SDK into one assistant message: the answer text, the server-run tool call, the phases', async () => {
    const message = await readByAiSdk(mapAll(toolTurn({ output: { files: ['README.md'] } })));
    expect(message.id).toBe(RUN);
    expect(message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['Let me look.', 'There is a README.']);
    expect(message.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ toolName: 'list_files', toolCallId: 'call_1', state: 'output-available', input: { path: '.' }, output: { files: ['README.md'] }, providerExecuted: true });
    // a data part with an id is replaced in place: each phase once, at its last status
    expect(message.parts.filter((p) => p.type === 'data-phase').map((p) => (p as { data: { phaseIndex: number; status: string } }).data)).toEqual([
      expect.objectContaining({ phaseIndex: 1, status: 'end' }),
      expect.objectContaining({ phaseIndex: 2, status: 'end' }),
      expect.objectContaining({ phaseIndex: 3, status: 'end' }),
    ]);
    expect(message.metadata).toMatchObject({ stopReason: 'final_answer', messageId: 'm1' });
  });

  it('a failed call is a tool-output-error with the tool\'s own reason; a refused one says it did not run', async () => {
    const events = run(
      ['start', { protocol: 'unified', userMessageId: 'u1' }],
      ['tool_calls', { calls: [{ id: 'c1', name: 'fetch_page', arguments: '{"url":"https://example.org"}' }, { id: 'c2', name: 'list_files', arguments: '{}' }] }],
      ['tool_phase', { toolId: 'fetch_page', stage: 'error', message: 'upstream answered 502', metadata: { callId: 'c1', outcome: 'exception' } }],
      ['tool_progress', { tool: 'fetch_page', callId: 'c1', action: 'failed', params: {}, isError: true, outcome: 'exception' }],
      ['tool_progress', { tool: 'list_files', callId: 'c2', action: 'refused', params: {}, isError: true }],
      ['done', { fullContent: '', stopReason: 'error', usage: {} }],
    );
    const parts = mapAll(events);
    expect(parts.filter((p) => p.type === 'tool-output-error').map((p) => [p.toolCallId, p.errorText])).toEqual([
      ['c1', 'upstream answered 502'],
      ['c2', 'Orion refused this call; the tool did not run'],
    ]);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'error' });
    const message = await readByAiSdk(parts);
    expect(message.parts.filter((p) => p.type === 'dynamic-tool').map((p) => (p as { state: string }).state)).toEqual(['output-error', 'output-error']);
  });

  it('an error event is an error part (and a data-error with its code); text open before it is closed', () => {
    const parts = mapAll(run(['start', {}], ['chunk', { content: 'Par' }], ['error', { code: 'llm_timeout', message: 'The model did not answer in time', retryable: true }], ['done', { stopReason: 'error' }]));
    expect(parts.map((p) => p.type)).toEqual(['start', 'text-start', 'text-delta', 'text-end', 'error', 'data-error', 'finish']);
    expect(parts[4]).toEqual({ type: 'error', errorText: 'The model did not answer in time' });
    expect(parts[5]).toEqual({ type: 'data-error', data: { code: 'llm_timeout', message: 'The model did not answer in time', retryable: true } });
  });

  it('maps approvals (#32) to the AI SDK v6 tool approval parts: request, then denied or the run goes on', async () => {
    const required = (approvalId: string, callId: string): [string, Record<string, unknown>] => [
      'approval_required',
      { approvalId, tool: 'write_file', callId, arguments: { path: 'a.txt' }, reason: 'TOOLS_REQUIRE_APPROVAL', expiresAt: '2026-11-27T14:00:00.000Z' },
    ];
    const events = run(
      ['start', {}],
      ['tool_calls', { calls: [{ id: 'c1', name: 'write_file', arguments: '{"path":"a.txt"}' }] }],
      required('ap1', 'c1'),
      ['approval_decided', { approvalId: 'ap1', decision: 'deny', edited: false, by: 'key-1', reason: 'not now' }],
      // a call the stream had not announced yet still gets its tool part first
      required('ap2', 'c2'),
      ['approval_decided', { approvalId: 'ap2', decision: 'approve', edited: true, by: null }],
    );
    const parts = mapAll(events);
    expect(parts.filter((p) => p.type === 'tool-approval-request')).toEqual([
      { type: 'tool-approval-request', approvalId: 'ap1', toolCallId: 'c1' },
      { type: 'tool-approval-request', approvalId: 'ap2', toolCallId: 'c2' },
    ]);
    expect(parts.filter((p) => p.type === 'tool-output-denied')).toEqual([{ type: 'tool-output-denied', toolCallId: 'c1' }]);
    expect(parts.filter((p) => p.type === 'data-approval').map((p) => p.data)).toEqual([
      { approvalId: 'ap1', tool: 'write_file', callId: 'c1', arguments: { path: 'a.txt' }, reason: 'TOOLS_REQUIRE_APPROVAL', expiresAt: '2026-11-27T14:00:00.000Z' },
      { approvalId: 'ap1', decision: 'deny', edited: false, by: 'key-1', reason: 'not now', callId: 'c1' },
      { approvalId: 'ap2', tool: 'write_file', callId: 'c2', arguments: { path: 'a.txt' }, reason: 'TOOLS_REQUIRE_APPROVAL', expiresAt: '2026-11-27T14:00:00.000Z' },
      { approvalId: 'ap2', decision: 'approve', edited: true, by: null, callId: 'c2' },
    ]);
    const message = await readByAiSdk(parts);
    const tools = message.parts.filter((p) => p.type === 'dynamic-tool') as Array<{ toolCallId: string; state: string; approval?: { id: string } }>;
    expect(tools.map((t) => [t.toolCallId, t.state, t.approval?.id])).toEqual([
      ['c1', 'output-denied', 'ap1'],
      // approved: no longer asking, running until its result comes
      ['c2', 'input-available', 'ap2'],
    ]);
  });

  /** The events the engine sends for a list_files call that waits for approval (as a run of test/e2e/ui-stream.e2e-spec.ts stored them). */
  const approvalTurn = (decision: 'approve' | 'deny') =>
    run(
      ['start', { protocol: 'unified', model: 'scripted-model', phaseIndex: 0 }],
      phase('action_phase', 'start', 1, 0),
      ['chunk', { content: 'Let me look. ' }],
      phase('action_phase', 'end', 1, 0, 'tool_calls'),
      ['tool_calls', { calls: [{ id: 'call_ls', name: 'list_files', arguments: '{"path":"."}' }] }],
      phase('tool_phase', 'start', 2, 1),
      ['tool_progress', { tool: 'list_files', action: 'calling', callId: 'call_ls', params: { path: '.' }, isError: false }],
      ['approval_required', { tool: 'list_files', callId: 'call_ls', reason: 'configured', arguments: { path: '.', recursive: false }, expiresAt: '2026-11-27T15:28:20.830Z', approvalId: 'ap-1' }],
      ...(decision === 'deny'
        ? ([
            ['approval_decided', { by: null, edited: false, reason: 'declined', decision: 'deny', approvalId: 'ap-1' }],
            ['tool_phase', { stage: 'error', toolId: 'list_files', message: 'the user declined this call (declined); it was not made. Do not call it again in this turn.', metadata: { callId: 'call_ls', outcome: 'denied' } }],
            ['tool_progress', { tool: 'list_files', action: 'failed', callId: 'call_ls', params: { path: '.', recursive: false }, isError: true, outcome: 'denied', durationMs: 0 }],
            phase('tool_phase', 'end', 2, 1, 'tool_errors'),
          ] as Array<[string, Record<string, unknown>]>)
        : ([
            ['approval_decided', { by: null, edited: false, decision: 'approve', approvalId: 'ap-1' }],
            ['tool_progress', { tool: 'list_files', action: 'completed', callId: 'call_ls', params: { path: '.', recursive: false }, isError: false, outcome: 'success', durationMs: 2 }],
            phase('tool_phase', 'end', 2, 1, 'success'),
          ] as Array<[string, Record<string, unknown>]>)),
      phase('action_phase', 'start', 3, 1),
      ['chunk', { content: '\n\nDone.' }],
      phase('action_phase', 'end', 3, 1, 'final_answer'),
      ['done', { phase: 'complete', fullContent: 'Let me look. \n\nDone.', messageId: 'm1', stopReason: 'final_answer', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, llmCalls: 2 } }],
    );

  it.each([
    ['approve', 'output-available', { output: { status: 'completed' } }],
    ['deny', 'output-denied', {}],
  ] as const)('the engine\'s real approval sequence, %s: the AI SDK ends the tool part %s', async (decision, state, extra) => {
    const parts = mapAll(approvalTurn(decision));
    // a denied call's failed (denied) progress is the engine's note for the model, not an error for the page
    expect(parts.some((p) => p.type === 'tool-output-error')).toBe(false);
    const message = await readByAiSdk(parts);
    const tools = message.parts.filter((p) => p.type === 'dynamic-tool');
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ toolCallId: 'call_ls', state, approval: { id: 'ap-1' }, ...extra });
  });

  it('sends each source once as source-url / source-document, and the sources event as data-sources', () => {
    const sources = (data: unknown[]): [string, Record<string, unknown>] => ['sources', { data, sourceTypes: ['web', 'rag'], ragCount: 1, webCount: 1, confidence: 'high', metrics: null }];
    const web = { type: 'web', title: 'Orion', url: 'https://example.org/orion' };
    const rag = { type: 'rag', title: 'Install', path: 'guides/install.md', snippet: 'npm install' };
    const parts = mapAll(run(['start', {}], sources([web]), sources([web, rag])));
    expect(parts.filter((p) => p.type.startsWith('source-'))).toEqual([
      { type: 'source-url', sourceId: 'https://example.org/orion', url: 'https://example.org/orion', title: 'Orion' },
      { type: 'source-document', sourceId: 'rag:guides/install.md', mediaType: 'text/plain', title: 'Install', filename: 'guides/install.md' },
    ]);
    expect(parts.filter((p) => p.type === 'data-sources').at(-1)).toEqual({
      type: 'data-sources',
      id: 'sources',
      data: { data: [web, rag], sourceTypes: ['web', 'rag'], ragCount: 1, webCount: 1, confidence: 'high', metrics: null },
    });
  });

  it('ends a paused run with data-paused and finish "other", a cancelled one with finish "other", a cut-off one with "length"', () => {
    expect(mapAll(run(['paused', { resumeFromPhaseIndex: 2 }])).map((p) => p.type)).toEqual(['data-paused', 'finish']);
    expect(mapAll(run(phase('action_phase', 'start', 1, 0), ['paused', { resumeFromPhaseIndex: 2 }])).map((p) => p.type)).toEqual(['start-step', 'data-phase', 'finish-step', 'data-paused', 'finish']);
    expect(mapAll(run(['done', { stopReason: 'cancelled' }]))[0]).toMatchObject({ finishReason: 'other' });
    expect(mapAll(run(['done', { stopReason: 'max_tokens' }]))[0]).toMatchObject({ finishReason: 'length' });
  });

  it('ends a turn the token budget stopped with finish "stop": it ended with a written answer, as the loop budgets do', () => {
    expect(mapAll(run(['done', { stopReason: 'token_budget' }]))[0]).toMatchObject({ finishReason: 'stop', messageMetadata: { stopReason: 'token_budget' } });
  });

  it('a takeover\'s start is metadata of the same message, not a second start; the replay without what it superseded reads as the answer once', async () => {
    const events = run(
      ['start', { protocol: 'unified', userMessageId: 'u1', phaseIndex: 0 }],
      phase('action_phase', 'start', 1, 0),
      ['chunk', { content: 'Let me look.' }],
      ['tool_calls', { calls: [{ id: 'call_1', name: 'list_files', arguments: '{}' }] }],
      phase('action_phase', 'end', 1, 0, 'tool_calls'),
      phase('tool_phase', 'start', 2, 1),
      ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'calling', params: {}, isError: false }],
      // seq 8: the dead instance's partial answer, which the continuation (seq 9) runs again
      ['chunk', { content: 'There is a REA' }],
      ['start', { protocol: 'unified', userMessageId: 'u1', resumed: true, takeover: true, resumeFromPhaseIndex: 1, supersedesFromSeq: 7 }],
      ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'calling', params: {}, isError: false }],
      ['tool_progress', { tool: 'list_files', callId: 'call_1', action: 'completed', params: {}, isError: false, outcome: 'success' }],
      phase('tool_phase', 'end', 2, 1, 'success'),
      phase('action_phase', 'start', 3, 1),
      ['chunk', { content: 'There is a README.' }],
      ['done', { fullContent: 'Let me look.There is a README.', stopReason: 'final_answer', usage: {} }],
    );
    const parts = mapAll(liveEvents(events));
    expect(parts.filter((p) => p.type === 'start')).toHaveLength(1);
    expect(parts.find((p) => p.type === 'message-metadata')).toMatchObject({ messageMetadata: { takeover: true, resumed: true, supersedesFromSeq: 7 } });
    const message = await readByAiSdk(parts);
    expect(message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toBe('Let me look.There is a README.');
    expect(message.parts.filter((p) => p.type === 'dynamic-tool')).toHaveLength(1);
    expect(message.metadata).toMatchObject({ takeover: true, stopReason: 'final_answer' });
  });

  it('leaves out event types it does not know, and does not change the state it was given', () => {
    const before = INITIAL_UI_STREAM_STATE;
    const r = toUiParts(before, { seq: 1, type: 'chunk', data: { content: 'x' } });
    expect(before.textId).toBeNull();
    expect(r.state.textId).toBe('text-1');
    expect(toUiParts(r.state, { seq: 2, type: 'some_future_event', data: {} }).parts).toEqual([]);
  });
});

describe('chat id → conversation id', () => {
  it('a UUID is the conversation id itself', () => {
    expect(conversationIdForChat('default', CONV.toUpperCase())).toBe(CONV);
  });

  it('any other id is a stable version-5 UUID of the project and the chat id', () => {
    const a = conversationIdForChat('default', 'd2x8Hk3Lq0ZbT9aF');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(conversationIdForChat('default', 'd2x8Hk3Lq0ZbT9aF')).toBe(a);
    expect(conversationIdForChat('other', 'd2x8Hk3Lq0ZbT9aF')).not.toBe(a);
    expect(conversationIdForChat('default', 'd2x8Hk3Lq0ZbT9aG')).not.toBe(a);
  });
});
