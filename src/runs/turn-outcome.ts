import { isSuperseded, supersededRanges } from './fork-prefix';
/** One event of a run as the edges read it (a stored or live SentEvent). */
export interface TurnEventLike {
  type: string;
  data: Record<string, unknown>;
}

/** A tool step of the turn, as a person reads it: what ran and how it ended. */
export interface TurnToolStep {
  name: string;
  status: 'completed' | 'failed' | 'refused';
  outcome?: string;
}

export interface TurnSource {
  type: string;
  title: string;
  url?: string;
  path?: string;
  snippet?: string;
}

/** What a run's events say once it ended (or so far): for the edges that answer with one result. */
export interface TurnOutcome {
  requestId?: string;
  conversationId?: string;
  answer: string;
  /** the done event's stop reason; undefined while the run has not ended */
  stopReason?: string;
  sources: TurnSource[];
  tools: TurnToolStep[];
  error?: { code: string; message: string };
  /** the approval the run waits for, when its last approval event asks for one */
  awaiting?: { approvalId: string; tool: string; arguments: unknown; expiresAt?: string };
}

/**
 * Folds a run's events into its outcome. Pure, so each edge (MCP, A2A) maps the same reading of
 * the stored event stream to its own wire format.
 */
export function turnOutcome(events: Iterable<TurnEventLike>): TurnOutcome {
  const out: TurnOutcome = { answer: '', sources: [], tools: [] };
  const all = [...events];
  // what a takeover superseded (issue 44) is not part of the outcome: the continued answer counts once
  const cuts = supersededRanges(all.filter(hasSeq));
  for (const e of all) if (!(hasSeq(e) && isSuperseded(cuts, e.seq))) foldTurnEvent(out, e);
  return out;
}

const hasSeq = (e: TurnEventLike): e is TurnEventLike & { seq: number } => typeof (e as { seq?: unknown }).seq === 'number';

export function foldTurnEvent(out: TurnOutcome, e: TurnEventLike): TurnOutcome {
  const d = e.data;
  if (typeof d.requestId === 'string') out.requestId ??= d.requestId;
  if (typeof d.conversationId === 'string') out.conversationId ??= d.conversationId;
  switch (e.type) {
    case 'chunk':
      out.answer += typeof d.content === 'string' ? d.content : '';
      break;
    case 'tool_progress':
      if (d.action === 'completed' || d.action === 'failed' || d.action === 'refused') {
        out.tools.push({ name: String(d.tool), status: d.action, ...(typeof d.outcome === 'string' && { outcome: d.outcome }) });
      }
      break;
    case 'sources':
      out.sources = (Array.isArray(d.data) ? d.data : []).map(source);
      break;
    case 'error':
      out.error = { code: String(d.code), message: String(d.message) };
      break;
    case 'approval_required':
      out.awaiting = { approvalId: String(d.approvalId), tool: String(d.tool), arguments: d.arguments, ...(typeof d.expiresAt === 'string' && { expiresAt: d.expiresAt }) };
      break;
    case 'approval_decided':
      if (out.awaiting?.approvalId === d.approvalId) delete out.awaiting;
      break;
    case 'done':
      // the stored answer is the whole answer, also when the stream held some of it back
      if (typeof d.fullContent === 'string') out.answer = d.fullContent;
      out.stopReason = String(d.stopReason);
      delete out.awaiting;
      break;
  }
  return out;
}

function source(s: unknown): TurnSource {
  const r = (s ?? {}) as Record<string, unknown>;
  const str = (k: string) => (typeof r[k] === 'string' ? { [k]: r[k] as string } : {});
  return { type: String(r.type), title: String(r.title ?? ''), ...str('url'), ...str('path'), ...str('snippet') };
}

/**
 * A readable line for a step of the turn (a tool starting or ending, a tool's own progress, an
 * approval asked for); null for events that are not progress.
 */
export function progressLine(e: TurnEventLike): string | null {
  const d = e.data;
  if (e.type === 'tool_progress') {
    const took = typeof d.durationMs === 'number' ? ` in ${d.durationMs} ms` : '';
    if (d.action === 'calling') return `Running ${String(d.tool)} ${JSON.stringify(d.params ?? {})}`;
    if (d.action === 'completed') return `${String(d.tool)} completed${took}`;
    if (d.action === 'failed') return `${String(d.tool)} failed${took}${typeof d.outcome === 'string' ? ` (${d.outcome})` : ''}`;
    if (d.action === 'refused') return `${String(d.tool)} was refused${typeof d.outcome === 'string' ? ` (${d.outcome})` : ''}`;
    return null;
  }
  if (e.type === 'tool_phase' && typeof d.message === 'string') return d.message;
  if (e.type === 'approval_required') return `Waiting for approval of ${String(d.tool)} (approvalId ${String(d.approvalId)}): ${decideRoute(String(d.requestId), String(d.approvalId))}`;
  if (e.type === 'approval_decided') return `Approval ${String(d.approvalId)}: ${String(d.decision)}`;
  return null;
}

/** Where a person decides an approval (the one route for it, whatever edge started the turn). */
export function decideRoute(requestId: string, approvalId: string): string {
  return `POST /api/chat/runs/${requestId}/approvals/${approvalId} {"decision":"approve"} or {"decision":"deny"}`;
}
