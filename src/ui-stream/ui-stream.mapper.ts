/**
 * Orion's stored run events as the AI SDK's UI message stream parts (the `ai` package's
 * `UIMessageChunk`, protocol `x-vercel-ai-ui-message-stream: v1`). A pure function of the state
 * so far and one event, so the live route and the resume route (stored events read back) map a
 * run the same way. docs/API.md "AI SDK UI message stream" lists the mapping.
 */

/** One part of the UI message stream, sent as one SSE `data:` line. */
export interface UiPart {
  type: string;
  [field: string]: unknown;
}

/** A stored run event: its seq, type and enveloped data (as run_events keeps it). */
export interface RunEventLike {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** What the mapper must remember between events: parts that open and close, ids already sent. */
export interface UiStreamState {
  /** whether the stream's `start` part was sent (the AI SDK's chat expects one per message) */
  readonly started: boolean;
  /** the text part open now (text-start sent, text-end not yet) */
  readonly textId: string | null;
  /** whether a step (start-step) is open */
  readonly stepOpen: boolean;
  /** tool calls whose part exists (tool-input-available sent): callId → tool name */
  readonly calls: Readonly<Record<string, string>>;
  /** approvalId → callId, for the decision that follows */
  readonly approvals: Readonly<Record<string, string>>;
  /** approvalId → the arguments shown for approval (the tool part's input when it is approved) */
  readonly approvalInputs: Readonly<Record<string, unknown>>;
  /** callId → a person's decision on it: an approved call ends in a result, a denied one stays denied */
  readonly decisions: Readonly<Record<string, 'approve' | 'deny'>>;
  /** a failed call's own reason (tool_phase stage error comes before its tool_progress failed) */
  readonly toolErrors: Readonly<Record<string, string>>;
  /** source ids already sent (two-stage repeats the turn's sources after each tool phase) */
  readonly sourceIds: readonly string[];
}

export const INITIAL_UI_STREAM_STATE: UiStreamState = { started: false, textId: null, stepOpen: false, calls: {}, approvals: {}, approvalInputs: {}, decisions: {}, toolErrors: {}, sourceIds: [] };

/** The AI SDK's finish reasons for Orion's stop reasons (an answer cut short by a guard is still an answer). */
const FINISH_REASON: Record<string, string> = {
  final_answer: 'stop',
  cycle_budget: 'stop',
  duplicate_limit: 'stop',
  no_progress: 'stop',
  content_loop: 'stop',
  max_iterations: 'stop',
  // the turn's token budget ended it with a written answer, as the loop budgets do
  token_budget: 'stop',
  max_tokens: 'length',
  cancelled: 'other',
  error: 'error',
};

/** Orion runs every tool itself: the client must not run them (providerExecuted) and does not know them in advance (dynamic). */
const SERVER_TOOL = { dynamic: true, providerExecuted: true } as const;

/** The next state and the parts one run event becomes. */
export function toUiParts(state: UiStreamState, event: RunEventLike): { state: UiStreamState; parts: UiPart[] } {
  const d = event.data;
  const parts: UiPart[] = [];
  let s = state;
  /** text-end for the open text part: before anything that is not text */
  const closeText = () => {
    if (s.textId === null) return;
    parts.push({ type: 'text-end', id: s.textId });
    s = { ...s, textId: null };
  };
  const closeStep = () => {
    closeText();
    if (!s.stepOpen) return;
    parts.push({ type: 'finish-step' });
    s = { ...s, stepOpen: false };
  };
  /** the tool part a later part needs (the AI SDK refuses an output for a call it has not seen) */
  const ensureCall = (callId: string, tool: string, input: unknown) => {
    if (s.calls[callId] !== undefined) return;
    parts.push({ type: 'tool-input-available', toolCallId: callId, toolName: tool, input, ...SERVER_TOOL });
    s = { ...s, calls: { ...s.calls, [callId]: tool } };
  };

  switch (event.type) {
    case 'start':
      // a later start (a takeover's continuation, a resumed leg) belongs to the same message: a
      // second `start` part would open it again, so what it adds goes in as metadata
      if (s.started) parts.push({ type: 'message-metadata', messageMetadata: startMetadata(d) });
      else parts.push({ type: 'start', messageId: str(d.requestId), messageMetadata: startMetadata(d) });
      s = { ...s, started: true };
      break;
    case 'phase': {
      const status = str(d.status);
      const phase = str(d.phase);
      // a step is one model call with the tool calls it made and their results, as the AI SDK
      // counts steps: it ends when the next model call starts (or the turn ends)
      if (phase === 'action_phase' && status === 'start') {
        closeStep();
        parts.push({ type: 'start-step' });
        s = { ...s, stepOpen: true };
      }
      if (status === 'end') closeText();
      parts.push({
        type: 'data-phase',
        id: `phase-${num(d.phaseIndex)}`,
        data: { phase, status, phaseIndex: num(d.phaseIndex), cycleIndex: num(d.cycleIndex), ...(d.reason !== undefined && { reason: d.reason }) },
      });
      break;
    }
    case 'chunk': {
      if (s.textId === null) {
        const id = `text-${event.seq}`;
        parts.push({ type: 'text-start', id });
        s = { ...s, textId: id };
      }
      parts.push({ type: 'text-delta', id: s.textId, delta: str(d.content) });
      break;
    }
    case 'tool_calls':
      closeText();
      for (const c of Array.isArray(d.calls) ? (d.calls as Array<Record<string, unknown>>) : []) ensureCall(str(c.id), str(c.name), parseArguments(c.arguments));
      break;
    case 'tool_progress': {
      closeText();
      const callId = str(d.callId);
      const tool = str(d.tool);
      ensureCall(callId, tool, d.params ?? {});
      const action = str(d.action);
      const decision = s.decisions[callId];
      // raw tool output reaches a stream only when the request asked for it (debugShowToolResults);
      // an approved call still ends in a result, one that reveals nothing, so the page does not
      // keep showing it as waiting
      if (action === 'completed' && 'output' in d) parts.push({ type: 'tool-output-available', toolCallId: callId, output: d.output, ...SERVER_TOOL });
      else if (action === 'completed' && decision === 'approve') parts.push({ type: 'tool-output-available', toolCallId: callId, output: { status: 'completed' }, ...SERVER_TOOL });
      // a denied call's `failed (denied)` is the engine's note for the model: the part stays output-denied
      if (action === 'failed' && !(decision === 'deny' && d.outcome === 'denied')) parts.push({ type: 'tool-output-error', toolCallId: callId, errorText: s.toolErrors[callId] ?? `${tool} failed (${str(d.outcome) || 'error'})`, ...SERVER_TOOL });
      if (action === 'refused') parts.push({ type: 'tool-output-error', toolCallId: callId, errorText: `Orion refused this call; the tool did not run${d.outcome ? ` (${str(d.outcome)})` : ''}`, ...SERVER_TOOL });
      parts.push({
        type: 'data-tool-progress',
        id: `tool-${callId}`,
        data: pick(d, ['tool', 'callId', 'action', 'outcome', 'isError', 'durationMs']),
      });
      break;
    }
    case 'tool_phase': {
      const metadata = (d.metadata ?? {}) as Record<string, unknown>;
      const callId = typeof metadata.callId === 'string' ? metadata.callId : undefined;
      if (d.stage === 'error' && callId) s = { ...s, toolErrors: { ...s.toolErrors, [callId]: str(d.message) } };
      parts.push({ type: 'data-tool-phase', id: `tool-phase-${callId ?? str(d.toolId)}`, data: pick(d, ['toolId', 'stage', 'message', 'metadata']) });
      break;
    }
    case 'sources': {
      closeText();
      const sent = new Set(s.sourceIds);
      for (const src of Array.isArray(d.data) ? (d.data as Array<Record<string, unknown>>) : []) {
        const part = sourcePart(src);
        if (!part || sent.has(part.sourceId as string)) continue;
        sent.add(part.sourceId as string);
        parts.push(part);
      }
      s = { ...s, sourceIds: [...sent] };
      parts.push({ type: 'data-sources', id: 'sources', data: pick(d, ['data', 'sourceTypes', 'ragCount', 'webCount', 'confidence', 'metrics']) });
      break;
    }
    case 'notice':
      parts.push({ type: 'data-notice', data: pick(d, ['code', 'message']) });
      break;
    case 'error':
      closeText();
      parts.push({ type: 'error', errorText: str(d.message) || str(d.code) });
      parts.push({ type: 'data-error', data: pick(d, ['code', 'message', 'retryable']) });
      break;
    case 'approval_required': {
      closeText();
      const callId = str(d.callId);
      ensureCall(callId, str(d.tool), d.arguments ?? {});
      s = { ...s, approvals: { ...s.approvals, [str(d.approvalId)]: callId }, approvalInputs: { ...s.approvalInputs, [str(d.approvalId)]: d.arguments ?? {} } };
      parts.push({ type: 'tool-approval-request', approvalId: str(d.approvalId), toolCallId: callId });
      parts.push({ type: 'data-approval', id: `approval-${str(d.approvalId)}`, data: pick(d, ['approvalId', 'tool', 'callId', 'arguments', 'reason', 'expiresAt']) });
      break;
    }
    case 'approval_decided': {
      const callId = s.approvals[str(d.approvalId)];
      if (callId !== undefined) {
        const decision = d.decision === 'approve' ? 'approve' : 'deny';
        s = { ...s, decisions: { ...s.decisions, [callId]: decision } };
        // a denied call never runs; an approved one leaves approval-requested (the AI SDK's UI
        // stream has no approval-response part: the call's input again puts it back to
        // input-available, running) and its result follows when it has run
        if (decision === 'deny') parts.push({ type: 'tool-output-denied', toolCallId: callId });
        else parts.push({ type: 'tool-input-available', toolCallId: callId, toolName: s.calls[callId], input: s.approvalInputs[str(d.approvalId)] ?? {}, ...SERVER_TOOL });
      }
      parts.push({ type: 'data-approval', id: `approval-${str(d.approvalId)}`, data: { ...pick(d, ['approvalId', 'decision', 'edited', 'by', 'reason']), ...(callId !== undefined && { callId }) } });
      break;
    }
    case 'paused':
      closeStep();
      parts.push({ type: 'data-paused', data: pick(d, ['requestId', 'resumeFromPhaseIndex']) });
      parts.push({ type: 'finish', finishReason: 'other', messageMetadata: { requestId: d.requestId, paused: true, resumeFromPhaseIndex: d.resumeFromPhaseIndex } });
      break;
    case 'done':
      closeStep();
      parts.push({
        type: 'finish',
        finishReason: FINISH_REASON[str(d.stopReason)] ?? 'other',
        messageMetadata: pick(d, ['requestId', 'conversationId', 'messageId', 'stopReason', 'usage']),
      });
      break;
    default:
      // an event type added later: left out rather than sent in a shape the client cannot read
      break;
  }
  return { state: s, parts };
}

/** What the `start` part tells the client about the run (the `start` event minus its envelope counters). */
function startMetadata(d: Record<string, unknown>): Record<string, unknown> {
  return pick(d, ['requestId', 'conversationId', 'projectId', 'protocol', 'model', 'userMessageId', 'resumed', 'resumeFromPhaseIndex', 'takeover', 'supersedesFromSeq', 'parentRequestId']);
}

/** A source the AI SDK can show: a web page as source-url, a knowledge-base file as source-document. */
function sourcePart(src: Record<string, unknown>): UiPart | undefined {
  const title = typeof src.title === 'string' ? src.title : undefined;
  if (typeof src.url === 'string' && src.url) return { type: 'source-url', sourceId: src.url, url: src.url, ...(title && { title }) };
  if (typeof src.path === 'string' && src.path) return { type: 'source-document', sourceId: `rag:${src.path}`, mediaType: 'text/plain', title: title ?? src.path, filename: src.path };
  return undefined;
}

/** A tool call's arguments as the object the model sent; a string that is not JSON stays a string. */
function parseArguments(args: unknown): unknown {
  if (typeof args !== 'string') return args ?? {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

function pick(d: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (d[k] !== undefined) out[k] = d[k];
  return out;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
