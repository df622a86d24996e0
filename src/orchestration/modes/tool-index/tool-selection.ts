import type { LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { TraceRecord } from '../../../trace/trace-sink.port';
import type { ToolIndexHit } from './tool-index';
import { roundRobin } from './rank-fusion.util';

/** Ranks tools for a query among the names `filter` accepts (ToolIndexService.search, or a ToolIndex behind searchMultiIntent). */
export type ToolRanker = (query: string, k: number, filter: (name: string) => boolean) => ToolIndexHit[];

/** Why a tool is in the offered set. A tool can have several reasons; the first that applies is kept. */
export type SelectionReason = 'builtin' | 'called_this_turn' | 'last_turn' | 'retrieved';

export interface ToolSelectionInput<T extends Pick<LlmToolSpec, 'name'> = LlmToolSpec> {
  /** every tool the project may offer now (what the route would otherwise pass to the model) */
  catalog: readonly T[];
  /** the user's request of this turn */
  request: string;
  /** the model's latest text in this turn (its previous step's answer or reasoning), if any */
  latestModelText?: string;
  /** tools already called in this turn, by name */
  calledThisTurn?: readonly string[];
  /** tools the conversation's last turn used, by name (toolsOfLastTurn) */
  lastTurnTools?: readonly string[];
  /** built-ins the protocol always needs, by name */
  builtins?: readonly string[];
}

export interface ToolSelectionOptions {
  /** retrieval applies only when the catalog has MORE tools than this */
  threshold: number;
  /** how many tools retrieval contributes (sticky and built-in tools come on top) */
  topK: number;
}

export interface SelectedTool {
  name: string;
  reason: SelectionReason;
  /** 1-based retrieval rank, or null when the tool is there for another reason only */
  rank: number | null;
  /** retrieval score 0..1 (ToolIndex.search), or null */
  score: number | null;
}

export interface ToolSelection<T> {
  /** the tools to offer the model, in catalog order (prompt caching likes a stable order) */
  tools: T[];
  /** false: the catalog is at or below the threshold and is offered whole */
  applied: boolean;
  catalogSize: number;
  threshold: number;
  topK: number;
  /** why each offered tool is there; empty when `applied` is false */
  selected: SelectedTool[];
}

/**
 * Sticky top-K: which tools one model step of a chat turn is offered.
 *
 * At or below the threshold the whole catalog is offered (nothing changes). Above it: the
 * built-ins the protocol needs, every tool already called in this turn, every tool the last
 * turn used (a follow-up such as "and now for Berlin" names no tool), then the top `topK` the
 * ranker finds for the request, fused round-robin with the top tools for the model's latest
 * text, so each step re-ranks with what the model just said ("I will now convert the amount…")
 * while the request keeps the first place. Names not in the catalog are ignored: a sticky tool
 * that is no longer available is not offered.
 */
export function selectTools<T extends Pick<LlmToolSpec, 'name'>>(input: ToolSelectionInput<T>, rank: ToolRanker, options: ToolSelectionOptions): ToolSelection<T> {
  const { catalog } = input;
  const base = { catalogSize: catalog.length, threshold: options.threshold, topK: options.topK };
  if (catalog.length <= options.threshold) return { ...base, tools: [...catalog], applied: false, selected: [] };

  const inCatalog = new Set(catalog.map((t) => t.name));
  const chosen = new Map<string, SelectedTool>();
  const stick = (names: readonly string[] | undefined, reason: SelectionReason): void => {
    for (const name of names ?? []) if (inCatalog.has(name) && !chosen.has(name)) chosen.set(name, { name, reason, rank: null, score: null });
  };
  stick(input.builtins, 'builtin');
  stick(input.calledThisTurn, 'called_this_turn');
  stick(input.lastTurnTools, 'last_turn');

  const k = Math.max(0, Math.floor(options.topK));
  const filter = (name: string): boolean => inCatalog.has(name);
  const lists: ToolIndexHit[][] = [];
  if (k > 0 && input.request.trim()) lists.push(rank(input.request, k, filter));
  if (k > 0 && input.latestModelText?.trim()) lists.push(rank(input.latestModelText, k, filter));
  const scores = new Map<string, number>();
  for (const list of lists) for (const h of list) scores.set(h.name, Math.max(scores.get(h.name) ?? 0, h.score));
  roundRobin(
    lists.map((l) => l.map((h) => h.name)),
    k,
  ).forEach((name, i) => {
    const sticky = chosen.get(name);
    if (sticky) Object.assign(sticky, { rank: i + 1, score: scores.get(name) ?? null });
    else chosen.set(name, { name, reason: 'retrieved', rank: i + 1, score: scores.get(name) ?? null });
  });

  return { ...base, applied: true, tools: catalog.filter((t) => chosen.has(t.name)), selected: [...chosen.values()] };
}

/**
 * Names of the tools the conversation's previous turn called: the assistant tool calls between
 * the last two user messages of `messages` (history ending with the new user message; without
 * the new message, the calls after the last one). A conversation with no previous turn gives [].
 */
export function toolsOfLastTurn(messages: readonly LlmMessage[]): string[] {
  const users = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
  const lastIsUser = messages[messages.length - 1]?.role === 'user';
  const start = lastIsUser ? users[users.length - 2] : users[users.length - 1];
  const end = lastIsUser ? users[users.length - 1] : messages.length;
  if (start === undefined) return [];
  const names = new Set<string>();
  for (const m of messages.slice(start + 1, end)) for (const c of m.toolCalls ?? []) names.add(c.name);
  return [...names];
}

/** The `tool_retrieval` trace event of one model step. */
export function toolRetrievalTrace(selection: ToolSelection<unknown>, ids: { requestId?: string | null; projectId?: string | null; step?: number }): TraceRecord {
  return {
    requestId: ids.requestId ?? null,
    projectId: ids.projectId ?? null,
    type: 'tool_retrieval',
    details: {
      step: ids.step ?? null,
      applied: selection.applied,
      catalogSize: selection.catalogSize,
      threshold: selection.threshold,
      topK: selection.topK,
      offered: selection.applied ? selection.selected.length : selection.catalogSize,
      selected: selection.selected.map((s) => ({ name: s.name, reason: s.reason, rank: s.rank, score: s.score === null ? null : Math.round(s.score * 1000) / 1000 })),
    },
  };
}
