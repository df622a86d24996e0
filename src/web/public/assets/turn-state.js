// The state of one chat turn on the page, folded from the run's SSE events. Pure: no DOM, no
// network (TurnRunner owns the connections). Events are applied at most once, by `seq`: after
// a reconnect the events route replays from the last seq seen, and anything already applied is
// skipped, so the answer has nothing missing and nothing repeated.

import { approvalDecided, approvalFromRow, approvalRequired, voidPending } from './approval-state.js';

/**
 * Where a turn is. Connection states are set by TurnRunner, the rest by events:
 *   connecting → streaming ⇄ reconnecting → done | stopped | failed
 *   streaming → pausing → paused → resuming → streaming
 *   streaming | paused → stopping → stopped
 *   reconnecting → disconnected (gave up; the user can retry)
 *   connecting → queued → streaming (behind the conversation's active turn, issue 33) | stopped
 * @typedef {'connecting' | 'queued' | 'streaming' | 'pausing' | 'paused' | 'resuming' | 'stopping'
 *   | 'reconnecting' | 'disconnected' | 'done' | 'stopped' | 'failed'} TurnStatus
 */

/**
 * @typedef {{ callId: string, name: string, status: string, isError: boolean, outcome?: string,
 *             detail?: string, errorMessage?: string, params?: unknown, output?: unknown,
 *             hasOutput: boolean, phaseIndex?: number, textOffset?: number }} ToolActivity
 * @typedef {{ phaseIndex: number, phase: string, cycleIndex: number, ended: boolean, reason?: string }} PhaseStep
 */

const TERMINAL = new Set(['done', 'stopped', 'failed']);
/** `tool_phase` stages that report a failure (the rest are progress). */
const ERROR_STAGES = new Set(['error', 'failed']);
const FINISHED = new Set(['completed', 'failed', 'refused']);
/** Outcomes of a call that waits for a person or was declined by one: a decision, not an error. */
const DECISION_OUTCOMES = new Set(['approval_required', 'denied']);

/** Whether a tool's outcome is a person's part (waiting, declined) rather than the tool's. @param {string | undefined} outcome */
export function isDecisionOutcome(outcome) {
  return outcome !== undefined && DECISION_OUTCOMES.has(outcome);
}

/** @param {string} status */
export function isTerminal(status) {
  return TERMINAL.has(status);
}

/** A turn that needs no open connection: finished, or paused until the user resumes it. */
export function isSettled(status) {
  return TERMINAL.has(status) || status === 'paused';
}

/** @param {Partial<ReturnType<typeof createTurnState>>} [init] */
export function createTurnState(init = {}) {
  return {
    /** @type {TurnStatus} */ status: 'connecting',
    /** what the user asked for and the server has not confirmed yet @type {'pause' | 'stop' | null} */ intent: null,
    /** @type {string | null} */ requestId: null,
    /** @type {string | null} */ conversationId: null,
    /** @type {string | null} */ protocol: null,
    lastSeq: 0,
    /** events skipped because their seq was already applied (replays after a reconnect) */ duplicates: 0,
    /** seq numbers that never arrived (should stay 0) */ gaps: 0,
    /** @type {string | null} */ phase: null,
    phaseIndex: 0,
    cycleIndex: 0,
    /** @type {PhaseStep[]} */ phases: [],
    content: '',
    /** where each chunk's text starts in `content`, by seq: a takeover's `start` cuts back to one @type {Array<[number, number]>} */ chunkAt: [],
    /** the phases, tools and notices live events added, by the seq that added them: a takeover's `start` removes those it supersedes @type {Array<[number, object]>} */ bornAt: [],
    /** @type {ToolActivity[]} */ tools: [],
    /** calls waiting for (or decided by) a person @type {import('./approval-state.js').Approval[]} */ approvals: [],
    /** @type {{ code: string, message: string }[]} */ notices: [],
    /** @type {Record<string, unknown> | null} */ sources: null,
    /** @type {{ code: string, message: string, retryable?: boolean } | null} */ error: null,
    /** @type {string | null} */ stopReason: null,
    /** @type {string | null} */ messageId: null,
    /** @type {number | null} */ resumeFromPhaseIndex: null,
    /** while queued behind the conversation's active turn: 1 = next to start @type {number | null} */ queuePosition: null,
    /** `done.fullContent` differed from the streamed text (it then replaces it) */ contentMismatch: false,
    reconnectAttempts: 0,
    ...init,
  };
}

/** @typedef {ReturnType<typeof createTurnState>} TurnState */

/** What a tool step's stored status is on the page (a call the turn ended during stays running). */
const STORED_TOOL_STATUS = { requested: 'requested', running: 'calling', completed: 'completed', failed: 'failed', refused: 'refused' };

/**
 * The settled state of a stored turn, from the messages route: its answer, how it ended and
 * the steps kept with it (`steps`, issue 13), so it is drawn exactly like the live turn was.
 * Messages stored before steps were kept have none and show the answer alone.
 * @param {{ content: string, status: string, requestId: string | null, stopReason?: string | null, steps?: Array<Record<string, any>> }} m
 */
export function stateFromStored(m) {
  const s = createTurnState({
    status: m.status === 'cancelled' ? 'stopped' : m.status === 'error' ? 'failed' : 'done',
    requestId: m.requestId,
    content: m.content,
    stopReason: m.stopReason ?? null,
  });
  for (const step of Array.isArray(m.steps) ? m.steps : []) {
    switch (step.type) {
      case 'phase':
        // a phase the turn ended inside (no end event) shows as the live one did: not ended
        s.phases.push({ phaseIndex: step.phaseIndex, phase: step.phase, cycleIndex: step.cycleIndex, ended: step.endReason !== undefined, reason: step.endReason ?? undefined });
        break;
      case 'tool':
        s.tools.push({
          callId: String(step.callId),
          name: String(step.name),
          status: STORED_TOOL_STATUS[/** @type {keyof typeof STORED_TOOL_STATUS} */ (step.status)] ?? String(step.status),
          isError: !!step.isError,
          outcome: typeof step.outcome === 'string' ? step.outcome : undefined,
          errorMessage: typeof step.message === 'string' ? step.message : undefined,
          params: step.arguments,
          hasOutput: false,
          ...(Number.isInteger(step.phaseIndex) ? { phaseIndex: step.phaseIndex } : {}),
          // where it happened in the text (answers stored before it was kept: before the text)
          ...(Number.isInteger(step.textOffset) ? { textOffset: step.textOffset } : {}),
        });
        break;
      case 'sources': {
        const { type: _type, ...sources } = step;
        s.sources = sources;
        break;
      }
      case 'notice':
        s.notices.push({ code: String(step.code ?? ''), message: String(step.message ?? '') });
        break;
      case 'error':
        s.error = { code: String(step.code ?? 'error'), message: String(step.message ?? '') };
        break;
      case 'approval':
        // kept with the answer as the approvals route returns it (when the server stores them)
        approvalFromRow(s, step);
        break;
      default:
        break; // a step kind this page does not know yet
    }
  }
  // a finished turn waits for no one
  voidPending(s);
  if (s.stopReason === 'max_tokens' && !s.notices.some((n) => n.code === 'response_truncated')) {
    s.notices.push({ code: 'response_truncated', message: 'The answer was cut off: the model reached its token limit.' });
  }
  return s;
}

/** The status a running turn shows while its stream is open: what the user asked for, if anything. */
export function liveStatus(/** @type {TurnState} */ s) {
  return s.intent === 'stop' ? 'stopping' : s.intent === 'pause' ? 'pausing' : 'streaming';
}

/**
 * Applies one SSE event. Returns false when it was skipped (a seq already applied).
 * @param {TurnState} s
 * @param {string} type the SSE event name
 * @param {Record<string, any>} data the parsed JSON data
 */
export function applyEvent(s, type, data) {
  if (!data || typeof data !== 'object') return false;
  const seq = data.seq;
  // seq 0: `queued` and the `done` of a turn cancelled while queued, sent before any run event
  if (Number.isInteger(seq) && seq > 0) {
    if (seq <= s.lastSeq) {
      s.duplicates++;
      return false;
    }
    if (seq > s.lastSeq + 1) s.gaps += seq - s.lastSeq - 1;
    s.lastSeq = seq;
  }
  if (typeof data.requestId === 'string') s.requestId = data.requestId;
  if (typeof data.conversationId === 'string') s.conversationId = data.conversationId;
  if (typeof data.phase === 'string') s.phase = data.phase;
  if (Number.isInteger(data.phaseIndex)) s.phaseIndex = data.phaseIndex;
  if (Number.isInteger(data.cycleIndex)) s.cycleIndex = data.cycleIndex;
  if (!isSettled(s.status) && type !== 'paused' && type !== 'done') s.status = liveStatus(s);

  switch (type) {
    case 'queued':
      if (!isSettled(s.status) && s.intent !== 'stop') s.status = 'queued';
      if (Number.isInteger(data.position)) s.queuePosition = data.position;
      break;
    case 'start':
      s.queuePosition = null;
      if (typeof data.protocol === 'string') s.protocol = data.protocol;
      // the run was continued on another instance (docs/API.md): the text streamed from this seq on is superseded
      if (Number.isInteger(data.supersedesFromSeq)) {
        const cut = (s.chunkAt ?? []).find(([at]) => at >= data.supersedesFromSeq);
        if (cut) s.content = s.content.slice(0, cut[1]);
        s.chunkAt = (s.chunkAt ?? []).filter(([at]) => at < data.supersedesFromSeq);
        // the phases, calls and notices of the cut attempt go too: the continuation sends its own
        const gone = new Set((s.bornAt ?? []).filter(([at]) => at >= data.supersedesFromSeq).map(([, entry]) => entry));
        s.phases = s.phases.filter((p) => !gone.has(p));
        s.tools = s.tools.filter((t) => !gone.has(t));
        s.notices = s.notices.filter((n) => !gone.has(n));
        s.bornAt = (s.bornAt ?? []).filter(([at]) => at < data.supersedesFromSeq);
      }
      break;
    case 'phase':
      if (data.status === 'start') {
        s.phases.push(born(s, seq, { phaseIndex: data.phaseIndex, phase: data.phase, cycleIndex: data.cycleIndex, ended: false }));
      } else {
        const step = s.phases.find((p) => p.phaseIndex === data.phaseIndex);
        if (step) Object.assign(step, { ended: true, reason: data.reason });
      }
      break;
    case 'chunk':
      if (typeof data.content !== 'string') break;
      if (Number.isInteger(seq)) (s.chunkAt ??= []).push([seq, s.content.length]);
      s.content += data.content;
      break;
    case 'tool_calls':
      for (const call of Array.isArray(data.calls) ? data.calls : []) upsertTool(s, call.id, { name: call.name, status: 'requested' }, seq);
      break;
    case 'tool_progress': {
      /** @type {Partial<ToolActivity>} */
      const patch = { name: data.tool, status: data.action, isError: !!data.isError };
      if (typeof data.outcome === 'string') patch.outcome = data.outcome;
      // the (secret-masked) arguments: fetch tools' URLs give each web source its fetch status
      if (data.params !== undefined) patch.params = data.params;
      if ('output' in data) Object.assign(patch, { output: data.output, hasOutput: true });
      upsertTool(s, data.callId, patch, seq);
      break;
    }
    case 'tool_phase': {
      // the call it names (an error stage carries its callId), else the latest call of that tool
      const callId = data.metadata && typeof data.metadata === 'object' ? data.metadata.callId : undefined;
      const tool = (callId !== undefined && s.tools.find((t) => t.callId === callId)) || [...s.tools].reverse().find((t) => t.name === data.toolId);
      if (!tool) break;
      if (ERROR_STAGES.has(String(data.stage))) {
        // a tool reporting its own failure: an error step, whatever the final progress says
        Object.assign(tool, { isError: true, errorMessage: typeof data.message === 'string' ? data.message : tool.errorMessage });
        if (tool.status !== 'completed') tool.status = 'failed';
      } else if (typeof data.message === 'string') tool.detail = data.message;
      break;
    }
    case 'sources':
      s.sources = data;
      break;
    case 'notice':
      s.notices.push(born(s, seq, { code: String(data.code ?? ''), message: String(data.message ?? '') }));
      break;
    case 'error':
      s.error = { code: String(data.code ?? 'error'), message: String(data.message ?? ''), retryable: !!data.retryable };
      break;
    case 'approval_required':
      approvalRequired(s, data);
      break;
    case 'approval_decided':
      approvalDecided(s, data);
      break;
    case 'paused':
      // a pause voids what waited; a resume asks again with a new approval
      voidPending(s);
      s.status = 'paused';
      s.intent = null;
      s.resumeFromPhaseIndex = Number.isInteger(data.resumeFromPhaseIndex) ? data.resumeFromPhaseIndex : s.phaseIndex;
      break;
    case 'done':
      s.stopReason = typeof data.stopReason === 'string' ? data.stopReason : null;
      s.messageId = typeof data.messageId === 'string' ? data.messageId : null;
      s.status = s.stopReason === 'cancelled' ? 'stopped' : s.stopReason === 'error' ? 'failed' : 'done';
      s.intent = null;
      voidPending(s);
      if (typeof data.fullContent === 'string' && data.fullContent !== s.content) {
        // the stored answer is the truth; say so, because a correct stream never gets here
        s.contentMismatch = true;
        s.content = data.fullContent;
      }
      break;
    default:
      break; // an event type this page does not know yet: its envelope was still applied
  }
  return true;
}

/**
 * Notes which live event added a phase, call or notice (see bornAt); returns the entry.
 * @template T
 * @param {TurnState} s
 * @param {unknown} seq
 * @param {T} entry
 * @returns {T}
 */
function born(s, seq, entry) {
  if (Number.isInteger(seq)) (s.bornAt ??= []).push([/** @type {number} */ (seq), /** @type {object} */ (entry)]);
  return entry;
}

/** @param {TurnState} s @param {unknown} callId @param {Partial<ToolActivity>} patch @param {unknown} seq the event's */
function upsertTool(s, callId, patch, seq) {
  const id = typeof callId === 'string' && callId ? callId : `tool-${s.tools.length + 1}`;
  let tool = s.tools.findLast((t) => t.callId === id);
  // some servers number calls per response, so a later step may reuse an id: a call that is
  // starting again after its namesake finished is a new call
  const starting = patch.status === 'calling' || patch.status === 'requested';
  if (tool && starting && isDecisionOutcome(tool.outcome)) {
    // the call that waited for a person now runs (or is declined): the same call, not a failure
    delete tool.outcome;
    delete tool.errorMessage;
    tool.isError = false;
  } else if (tool && starting && FINISHED.has(tool.status)) tool = undefined;
  if (!tool) {
    // the phase of the event that first named the call (as its stored step keeps it): the
    // action phase that called it, or the tool phase when no `tool_calls` came first
    tool = { callId: id, name: String(patch.name ?? 'tool'), status: 'requested', isError: false, hasOutput: false, ...(s.phaseIndex ? { phaseIndex: s.phaseIndex } : {}), textOffset: s.content.length };
    s.tools.push(born(s, seq, tool));
  }
  // a failure reported earlier (tool_phase error) stays an error when the final progress arrives
  Object.assign(tool, patch, { name: String(patch.name ?? tool.name), isError: !!(patch.isError || tool.isError) });
  if (tool.isError && tool.status === 'completed') tool.status = 'failed';
}

/**
 * The turn's text and its tool calls in the order they happened: the text streamed before a
 * call, the calls named at that point, the text after them, and so on. A call without a
 * `textOffset` (an answer stored before it was kept) comes before the text, as it used to.
 * @param {{ content: string, tools: ToolActivity[] }} s
 * @returns {Array<{ kind: 'text', text: string } | { kind: 'tools', tools: ToolActivity[] }>}
 */
export function turnFlow(s) {
  /** @type {Array<{ kind: 'text', text: string } | { kind: 'tools', tools: ToolActivity[] }>} */
  const flow = [];
  let at = 0;
  for (const t of s.tools) {
    const offset = Math.min(Math.max(at, Number.isInteger(t.textOffset) ? /** @type {number} */ (t.textOffset) : 0), s.content.length);
    if (offset > at) flow.push({ kind: 'text', text: s.content.slice(at, offset) });
    at = offset;
    const last = flow.at(-1);
    if (last?.kind === 'tools') last.tools.push(t);
    else flow.push({ kind: 'tools', tools: [t] });
  }
  flow.push({ kind: 'text', text: s.content.slice(at) });
  return flow;
}

/**
 * Whether a call waits for a person: an approval asked for it and not decided yet.
 * @param {ToolActivity} t @param {import('./approval-state.js').Approval[]} approvals
 */
export function isWaitingForApproval(t, approvals) {
  return approvals.some((a) => a.status === 'pending' && a.callId === t.callId);
}

/**
 * Whether a tool's activity is an error step: it failed, or it was refused because its
 * arguments were unusable (a refused duplicate is not an error). @param {ToolActivity} t
 */
export function isErrorStep(t) {
  if (isDecisionOutcome(t.outcome)) return false;
  return t.status === 'failed' || (t.isError && t.status !== 'calling' && t.status !== 'requested');
}

/** What a tool outcome means, in words. @param {string | undefined} outcome */
export function outcomeLabel(outcome) {
  return (
    { approval_required: 'waiting for approval', denied: 'declined', validation_error: 'invalid arguments', unavailable: 'unavailable', rate_limited: 'rate limited', timeout: 'timed out', cancelled: 'cancelled', exception: 'failed', success: 'reported an error' }[
      outcome ?? ''
    ] ?? 'failed'
  );
}

/** What a phase is called on the page. @param {string | null | undefined} phase */
export function phaseLabel(phase) {
  return phase === 'tool_phase' ? 'Running tools' : phase === 'action_phase' ? 'Answering' : phase === 'complete' ? 'Complete' : 'Starting';
}

/**
 * What a step of the phase trail did: "Called list_files" for an action phase that ended by
 * calling tools, "Ran list_files" for the tool phase that ran them, "Waiting for approval:
 * read_file" while a call of a tool phase waits for a person, "Answer" for the rest.
 * A call belongs to the phase of the event that first named it (the calling action phase, or
 * its tool phase); a refused call never ran, so it is left out.
 * @param {PhaseStep} p @param {ToolActivity[]} tools
 * @param {import('./approval-state.js').Approval[]} [approvals] the turn's approvals
 */
export function stepLabel(p, tools, approvals = []) {
  const calledTools = p.phase === 'action_phase' && (p.reason === 'tool_call' || p.reason === 'tool_calls');
  if (p.phase !== 'tool_phase' && !calledTools) return 'Answer';
  const [actionIndex, toolIndex] = p.phase === 'tool_phase' ? [p.phaseIndex - 1, p.phaseIndex] : [p.phaseIndex, p.phaseIndex + 1];
  const mine = tools.filter((t) => t.status !== 'refused' && (t.phaseIndex === actionIndex || t.phaseIndex === toolIndex));
  const names = (/** @type {ToolActivity[]} */ list) => [...new Set(list.map((t) => t.name))].join(', ') || 'tools';
  if (p.phase !== 'tool_phase') return `Called ${names(mine)}`;
  const waiting = mine.filter((t) => isWaitingForApproval(t, approvals));
  return waiting.length ? `Waiting for approval: ${names(waiting)}` : `Ran ${names(mine)}`;
}

/** @type {Record<TurnStatus, string>} */
export const STATUS_LABELS = {
  connecting: 'Sending…',
  queued: 'Queued',
  streaming: 'Streaming',
  pausing: 'Pausing…',
  paused: 'Paused',
  resuming: 'Resuming…',
  stopping: 'Stopping…',
  reconnecting: 'Reconnecting…',
  disconnected: 'Disconnected',
  done: 'Done',
  stopped: 'Stopped',
  failed: 'Failed',
};
