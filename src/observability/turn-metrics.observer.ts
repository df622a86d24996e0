import type { LlmEvent } from '../llm/llm-events';
import type { TraceRecord } from '../trace/trace-sink.port';
import { approvalDecision } from './approval-decision';
import type { MetricsService } from './metrics.service';

interface TurnState {
  protocol: string;
  startedAt: number;
  firstChunkSeen: boolean;
  modelCallAt?: number;
}

/** Turns this instance follows at once; past it the oldest is forgotten (its end is then counted without a duration). */
const MAX_TRACKED = 10_000;

const END_TYPES = new Set(['run_completed', 'run_failed', 'run_cancelled', 'run_paused']);

/** Outcomes of a call that did not end: it waits for a person and runs (or is declined) later, counted then. */
const NOT_ENDED_OUTCOMES = new Set(['approval_required']);

/**
 * Moves the Prometheus metrics from the trace records of a turn as they are made: the trace
 * already says when a turn, a model call and a tool start and end, and how they ended.
 */
export class TurnMetricsObserver {
  private readonly turns = new Map<string, TurnState>();
  /** approvals asked on this instance and not answered yet: approvalId → the run that asked */
  private readonly pendingApprovals = new Map<string, string>();

  constructor(
    private readonly metrics: MetricsService,
    private readonly llm: { provider: string; model: string },
    /**
     * Whether a name is a registered tool. Tool names come from the model: an invented name
     * would otherwise become a new label value and series on every call, so they are counted
     * as `unknown` (the trace still has the name).
     */
    private readonly isTool: (name: string) => boolean = () => true,
  ) {}

  onRecord(rec: TraceRecord, at: number): void {
    const d = rec.details ?? {};
    const id = rec.requestId ?? undefined;
    switch (rec.type) {
      case 'run_started':
      case 'run_resumed':
        if (!id) return;
        if (this.turns.size >= MAX_TRACKED) this.turns.delete(this.turns.keys().next().value!);
        // a resumed run names its protocol (a unified one continued after its instance died);
        // one traced before it did was a two-stage one (only two-stage runs paused)
        this.turns.set(id, { protocol: str(d.protocol, rec.type === 'run_resumed' ? 'two-stage' : 'unknown'), startedAt: at, firstChunkSeen: false });
        return;
      case 'storage_purged': {
        const removed = (d.removed ?? {}) as Record<string, unknown>;
        for (const [table, n] of Object.entries(removed)) if (typeof n === 'number' && n > 0) this.metrics.rowsPurged.inc({ table }, n);
        return;
      }
      case 'storage_compacted':
        if (typeof d.runs === 'number' && d.runs > 0) this.metrics.runsCompacted.inc(d.runs);
        return;
      case 'llm_request':
        if (typeof d.forced === 'string') this.metrics.forcedFinals.inc({ reason: d.forced });
        this.modelCallStarted(id, at);
        return;
      case 'llm_response':
      case 'llm_error':
        return this.modelCallEnded(rec.type, id, d, at);
      case 'tool_result': {
        const tool = this.toolLabel(d.name);
        const outcome = str(d.outcome, 'unknown');
        // the same call comes back as `success`, `denied`… once decided: counted once, then
        if (NOT_ENDED_OUTCOMES.has(outcome)) return;
        this.metrics.toolExecutions.inc({ tool, outcome });
        if (typeof d.latencyMs === 'number') this.metrics.toolDuration.observe({ tool }, d.latencyMs / 1000);
        return;
      }
      case 'loop_detected': {
        // route: the turn's protocol, or the tool-only mode that traced it
        const route = (id && this.turns.get(id)?.protocol) || str(d.route, 'unknown');
        this.metrics.loops.inc({ kind: str(d.kind, 'unknown'), route });
        return;
      }
      case 'duplicate_tool_call':
        this.metrics.toolRefusals.inc({ tool: this.toolLabel(d.name), reason: 'duplicate' });
        return;
      case 'tool_call_invalid':
        this.metrics.toolRefusals.inc({ tool: this.toolLabel(d.name), reason: 'invalid_arguments' });
        return;
      case 'tool_call_refused':
        this.metrics.toolRefusals.inc({ tool: this.toolLabel(d.toolName), reason: str(d.reason, 'refused') });
        return;
      case 'run_taken_over':
        this.metrics.takenOver.inc({ route: str(d.route, 'unknown'), outcome: str(d.outcome, 'unknown') });
        return;
      case 'tool_execution_continued':
        // a keyed tool-only execution a retry took over: continued (a call cut off reads `interrupted` in it)
        this.metrics.takenOver.inc({ route: 'tool-only', outcome: 'continued' });
        return;
      case 'approval_requested':
        return this.approvalRequested(id, d);
      case 'approval_decided':
        return this.approvalDecided(d);
      default:
        if (END_TYPES.has(rec.type)) {
          this.turnEnded(rec.type, id, d, at);
          this.projectUsage(rec.projectId, d.usage);
          // a run that ends or pauses while it waits voids its approvals: none waits here any more
          if (id) this.forgetApprovalsOf(id);
        }
    }
  }

  onLlmEvent(e: LlmEvent): void {
    if (e.type === 'retry') {
      this.metrics.llmRetries.inc({ provider: e.provider, reason: e.code });
      return;
    }
    if (e.type !== 'first_chunk') return;
    const turn = e.requestId ? this.turns.get(e.requestId) : undefined;
    if (!turn || turn.firstChunkSeen) return;
    turn.firstChunkSeen = true;
    this.metrics.timeToFirstChunk.observe({ protocol: turn.protocol }, Math.max(0, e.atMs - turn.startedAt) / 1000);
  }

  private modelCallEnded(type: string, id: string | undefined, d: Record<string, unknown>, at: number): void {
    const labels = { provider: this.llm.provider, model: this.llm.model };
    const turn = id ? this.turns.get(id) : undefined;
    const started = turn ? turn.modelCallAt : id ? this.loose.get(id) : undefined;
    if (id) this.loose.delete(id);
    if (turn) turn.modelCallAt = undefined;
    const outcome = type === 'llm_response' ? 'success' : str(d.code, 'error');
    if (started !== undefined) this.metrics.modelCallDuration.observe({ ...labels, outcome }, Math.max(0, at - started) / 1000);
    const usage = d.usage as { promptTokens?: unknown; completionTokens?: unknown } | null | undefined;
    if (usage && typeof usage.promptTokens === 'number') this.metrics.modelTokens.inc({ ...labels, kind: 'prompt' }, usage.promptTokens);
    if (usage && typeof usage.completionTokens === 'number') this.metrics.modelTokens.inc({ ...labels, kind: 'completion' }, usage.completionTokens);
  }

  private turnEnded(type: string, id: string | undefined, d: Record<string, unknown>, at: number): void {
    const turn = id ? this.turns.get(id) : undefined;
    if (id) this.turns.delete(id);
    // a paused turn has not ended for the user: it is counted when its resumed run ends
    if (type === 'run_paused') return;
    const protocol = turn?.protocol ?? 'unknown';
    const stopReason = str(d.stopReason, type === 'run_cancelled' ? 'cancelled' : 'error');
    this.metrics.turns.inc({ protocol, stop_reason: stopReason });
    if (turn) this.metrics.turnDuration.observe({ protocol, stop_reason: stopReason }, Math.max(0, at - turn.startedAt) / 1000);
  }

  /** a turn's usage and cost by project (issue 46): what a project spends, on /metrics too */
  private projectUsage(projectId: string | null | undefined, raw: unknown): void {
    const u = (raw ?? {}) as { totalTokens?: unknown; cost?: unknown };
    const project = projectId ?? 'unknown';
    if (typeof u.totalTokens === 'number' && u.totalTokens > 0) this.metrics.projectTokens.inc({ project }, u.totalTokens);
    if (typeof u.cost === 'number' && u.cost > 0) this.metrics.projectCost.inc({ project }, u.cost);
  }

  private approvalRequested(id: string | undefined, d: Record<string, unknown>): void {
    if (typeof d.approvalId !== 'string' || !id) return;
    if (this.pendingApprovals.size >= MAX_TRACKED) this.pendingApprovals.delete(this.pendingApprovals.keys().next().value!);
    this.pendingApprovals.set(d.approvalId, id);
    this.metrics.approvalsPending.set(this.pendingApprovals.size);
  }

  private approvalDecided(d: Record<string, unknown>): void {
    const decision = approvalDecision(d);
    if (decision) this.metrics.approvals.inc({ decision });
    // an approval asked on another instance (this one took the run over) was never counted as pending here
    if (typeof d.approvalId === 'string' && this.pendingApprovals.delete(d.approvalId)) this.metrics.approvalsPending.set(this.pendingApprovals.size);
  }

  private forgetApprovalsOf(requestId: string): void {
    let changed = false;
    for (const [approvalId, owner] of this.pendingApprovals) {
      if (owner === requestId) changed = this.pendingApprovals.delete(approvalId) || changed;
    }
    if (changed) this.metrics.approvalsPending.set(this.pendingApprovals.size);
  }

  private toolLabel(name: unknown): string {
    return typeof name === 'string' && name && this.isTool(name) ? name : 'unknown';
  }

  /** model calls outside a chat turn (tool-only /execute), by requestId */
  private readonly loose = new Map<string, number>();

  private modelCallStarted(id: string | undefined, at: number): void {
    const turn = id ? this.turns.get(id) : undefined;
    if (turn) turn.modelCallAt = at;
    else if (id) {
      if (this.loose.size >= MAX_TRACKED) this.loose.delete(this.loose.keys().next().value!);
      this.loose.set(id, at);
    }
  }
}

function str(v: unknown, fallback: string): string {
  return typeof v === 'string' && v ? v : fallback;
}
