import type { ToolIndex, ToolIndexHit } from './tool-index';
import { splitIntents } from './intent-split.util';
import { roundRobin } from './rank-fusion.util';
import { analyze } from './tool-text.util';

/** What `searchMultiIntent` did, for traces and tests. */
export interface MultiIntentResult {
  hits: ToolIndexHit[];
  /** the distinct tasks searched on their own; one entry (the whole request) when the request is one task */
  intents: string[];
}

/** Intents whose analyzed words overlap this much (Jaccard) ask for the same task with other arguments. */
export const SAME_TASK_OVERLAP = 0.5;

/**
 * Multi-intent retrieval. The request is split into intents (splitIntents); intents that ask
 * for the same task again are merged (distinctTasks). With one task this is exactly
 * `index.search(request, …)`, so single-intent requests rank as before. With several, the
 * whole request and each task are searched on their own and the lists are fused round-robin
 * with de-duplication, the whole request first: rank 1 stays the whole request's best tool,
 * and each task's best tool follows before any list's second, so every task's best tool
 * reaches the top k once k ≥ 1 + tasks. A hit keeps the best score it has in any list, so
 * `minScore` still reads "explains at least this much of (a part of) the request".
 *
 * Reciprocal-rank fusion was measured too (bench/README.md): it lets a tool that is second in
 * several lists overtake each task's first, which is the failure this is meant to fix.
 */
export function searchMultiIntent(
  index: ToolIndex,
  request: string,
  k: number,
  minScore = 0,
  filter?: (name: string) => boolean,
): MultiIntentResult {
  return fuseTasks(request, tasksOf(request), k, (q, limit) => index.search(q, limit, minScore, filter));
}

/** The distinct tasks of a request (splitIntents, then distinctTasks); one or none: a single task. */
export function tasksOf(request: string): string[] {
  return distinctTasks(splitIntents(request));
}

/**
 * The fusion of searchMultiIntent over any ranking of one text (`rank`, best first): with one
 * task, `rank(request, k)`; with several, the whole request's list and each task's list fused
 * round-robin, the whole request first; a hit keeps its best score in any list.
 */
export function fuseTasks(request: string, tasks: string[], k: number, rank: (text: string, limit: number) => ToolIndexHit[]): MultiIntentResult {
  if (tasks.length <= 1) return { hits: rank(request, k), intents: [request] };
  const limit = Math.floor(k);
  const lists = [request, ...tasks].map((q) => rank(q, limit));
  const best = new Map<string, ToolIndexHit>();
  for (const list of lists) {
    for (const h of list) if ((best.get(h.name)?.score ?? -1) < h.score) best.set(h.name, h);
  }
  const fused = roundRobin(
    lists.map((l) => l.map((h) => h.name)),
    limit,
  );
  return { hits: fused.map((n) => best.get(n)!), intents: tasks };
}

/**
 * Intents that ask for the same task with other arguments ("the time for a car at 50 m/s…;
 * also the time for a bullet at 400 m/s") are one task for retrieval: an intent whose analyzed
 * words overlap an earlier kept one by at least SAME_TASK_OVERLAP is dropped, and so is one
 * with no index word at all ("Thanks!") or only words about the request itself (META_TERMS).
 */
export function distinctTasks(intents: string[]): string[] {
  const kept: Array<{ text: string; terms: Set<string> }> = [];
  for (const text of intents) {
    const terms = new Set(analyze(text));
    if (terms.size === 0 || [...terms].every((t) => META_TERMS.has(t))) continue;
    if (!kept.some((k) => jaccard(k.terms, terms) >= SAME_TASK_OVERLAP)) kept.push({ text, terms });
  }
  return kept.map((k) => k.text);
}

/**
 * Words of a request about the request itself ("Can you help me with a few tasks?", "Can you
 * assist with these?"): an intent made only of them asks for no tool. Stemmed as analyze does.
 */
const META_TERMS: ReadonlySet<string> = new Set(analyze('help assist task tasks thing things question questions request requests following few two three several multiple couple'));

function jaccard(a: Set<string>, b: Set<string>): number {
  let inter = 0;
  for (const t of a) if (b.has(t)) inter++;
  return inter / (a.size + b.size - inter);
}
