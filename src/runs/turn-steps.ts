import type { TurnApprovalStep, TurnStep, TurnToolStep } from './answer-store.port';

/** Sources kept per stored turn: a page renders the first few anyway, and JSONB rows stay small. */
const MAX_SOURCES = 50;

/**
 * Folds a run's events, as they were stored and sent, into the steps its assistant message
 * keeps: each tool call with its shown arguments, outcome and duration, the sources, notices,
 * errors and the phases. One fold serves a live run, a resumed run (seeded from the stored
 * events of its first leg) and a run another instance closes, so a reloaded conversation shows
 * what the live turn showed whichever way the turn ended.
 */
export class TurnStepsRecorder {
  private readonly list: TurnStep[] = [];
  /** the open entry of each call id: servers that reuse ids per response start a new one */
  private readonly openCalls = new Map<string, TurnToolStep>();

  /** characters of answer text so far (a resumed leg's start with the earlier legs' text) */
  private textLength: number;

  constructor(prior: readonly TurnStep[] = [], priorTextLength = 0) {
    if (prior.length > 0) this.list.push(...structuredClone(prior));
    this.textLength = priorTextLength;
  }

  /** Steps of stored events (`data` enveloped as sent), those after `maxPhaseIndex` left out; `priorTextLength`: answer text before them (a fork's prefix). */
  static fromStored(events: ReadonlyArray<{ type: string; data: Record<string, unknown> }>, maxPhaseIndex = Infinity, priorTextLength = 0): TurnStep[] {
    const r = new TurnStepsRecorder([], priorTextLength);
    for (const e of events) if (!(Number(e.data.phaseIndex) > maxPhaseIndex)) r.apply(e.type, e.data);
    return r.steps();
  }

  /** Applies one event (protocol event fields, with or without the envelope). */
  apply(type: string, d: Record<string, unknown>): void {
    const phaseIndex = Number.isInteger(d.phaseIndex) ? (d.phaseIndex as number) : undefined;
    switch (type) {
      case 'phase':
        if (d.status === 'start') this.list.push({ type: 'phase', phase: String(d.phase), phaseIndex: Number(d.phaseIndex), cycleIndex: Number(d.cycleIndex) });
        else {
          const open = this.list.findLast((s) => s.type === 'phase' && s.phaseIndex === Number(d.phaseIndex));
          if (open?.type === 'phase') open.endReason = typeof d.reason === 'string' ? d.reason : null;
        }
        return;
      case 'tool_calls':
        for (const c of Array.isArray(d.calls) ? (d.calls as Array<Record<string, unknown>>) : []) {
          this.call(String(c.id ?? ''), String(c.name ?? 'tool'), true, phaseIndex).arguments ??= parseArguments(c.arguments);
        }
        return;
      case 'tool_progress': {
        const step = this.call(String(d.callId ?? ''), String(d.tool ?? 'tool'), d.action === 'calling', phaseIndex);
        step.status = d.action === 'calling' ? 'running' : (String(d.action) as TurnToolStep['status']);
        if (d.params !== undefined) step.arguments = d.params;
        if (typeof d.outcome === 'string') step.outcome = d.outcome;
        step.isError = step.isError || d.isError === true;
        if (typeof d.durationMs === 'number') step.durationMs = d.durationMs;
        if (d.action !== 'calling') this.openCalls.delete(step.callId);
        return;
      }
      case 'tool_phase': {
        const meta = (d.metadata ?? {}) as Record<string, unknown>;
        if (d.stage !== 'error' && d.stage !== 'failed') return; // progress text matters only while it runs
        const step = (typeof meta.callId === 'string' && this.openCalls.get(meta.callId)) || this.list.findLast((s): s is TurnToolStep => s.type === 'tool' && s.name === d.toolId);
        if (step) Object.assign(step, { isError: true, message: String(d.message ?? '') });
        return;
      }
      case 'sources': {
        const data = Array.isArray(d.data) ? d.data.slice(0, MAX_SOURCES) : [];
        const sources = { type: 'sources' as const, data, sourceTypes: arr(d.sourceTypes), ragCount: Number(d.ragCount ?? 0), webCount: Number(d.webCount ?? 0), confidence: String(d.confidence ?? 'none'), ...(d.metrics && typeof d.metrics === 'object' ? { metrics: d.metrics as Record<string, unknown> } : {}) };
        const i = this.list.findIndex((s) => s.type === 'sources');
        if (i >= 0) this.list[i] = sources;
        else this.list.push(sources);
        return;
      }
      case 'approval_required': {
        if (typeof d.approvalId !== 'string') return;
        const step = this.approval(d.approvalId);
        Object.assign(step, {
          tool: String(d.tool ?? step.tool),
          callId: String(d.callId ?? step.callId),
          arguments: d.arguments ?? step.arguments,
          reason: String(d.reason ?? step.reason),
          expiresAt: typeof d.expiresAt === 'string' ? d.expiresAt : step.expiresAt,
          ...(phaseIndex !== undefined ? { phaseIndex } : {}),
        });
        // asked again after a takeover: it waits again (a decided one keeps its decision)
        if (step.status === 'void') step.status = 'pending';
        return;
      }
      case 'approval_decided': {
        if (typeof d.approvalId !== 'string') return;
        const by = typeof d.by === 'string' ? d.by : null;
        const decision = d.decision === 'approve' ? 'approve' : 'deny';
        Object.assign(this.approval(d.approvalId), {
          status: decision === 'approve' ? 'approved' : by === 'timeout' ? 'expired' : 'denied',
          decision,
          edited: d.edited === true,
          by,
          decisionReason: typeof d.reason === 'string' ? d.reason : null,
        });
        return;
      }
      case 'notice':
        this.list.push({ type: 'notice', code: String(d.code ?? ''), message: String(d.message ?? '') });
        return;
      case 'error':
        this.list.push({ type: 'error', code: String(d.code ?? 'error'), message: String(d.message ?? '') });
        return;
      case 'chunk':
        // the answer itself, not a step: counted so that each call knows where it sits in the text
        if (typeof d.content === 'string') this.textLength += d.content.length;
        return;
      default:
        return; // start/checkpoint/paused/done are not steps
    }
  }

  /**
   * A copy of the steps so far (one structuredClone for the list: each call sets one up). Its
   * callers keep the steps of a leg that ended (an answer, a failure, a pause before a resume),
   * so an approval still pending here will never be decided: it is `void`, as its row is.
   */
  steps(): TurnStep[] {
    const list = structuredClone(this.list);
    for (const s of list) if (s.type === 'approval' && s.status === 'pending') s.status = 'void';
    return list;
  }

  private approval(approvalId: string): TurnApprovalStep {
    const open = this.list.find((s): s is TurnApprovalStep => s.type === 'approval' && s.approvalId === approvalId);
    if (open) return open;
    const step: TurnApprovalStep = { type: 'approval', approvalId, tool: 'tool', callId: '', arguments: {}, reason: '', expiresAt: null, status: 'pending', decision: null, edited: false, by: null, decisionReason: null };
    this.list.push(step);
    return step;
  }

  private call(callId: string, name: string, starting: boolean, phaseIndex: number | undefined): TurnToolStep {
    const open = this.openCalls.get(callId);
    if (open && !(starting && open.status !== 'requested' && open.status !== 'running')) return open;
    const step: TurnToolStep = { type: 'tool', callId, name, status: 'requested', isError: false, ...(phaseIndex !== undefined ? { phaseIndex } : {}), textOffset: this.textLength };
    this.list.push(step);
    this.openCalls.set(callId, step);
    return step;
  }
}

function parseArguments(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function arr(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}
