import type { RunEntity } from './entities/run.entity';
import type { RunEventRepository, StoredRunEvent } from './repositories/run-event.repository';
import type { RunRepository } from './repositories/run.repository';

/** A chain of forks deeper than this is cut (a guard against a cycle written by hand). */
const MAX_FORK_DEPTH = 64;

/**
 * `events` without those a takeover superseded (issue 44): a `start` carrying `supersedesFromSeq`
 * (the continuation of a run whose instance died mid-phase) voids the events from that seq up to
 * itself, the phase cut short, which the continuation runs again. Everything built from stored
 * events (the answer, its steps, the edges' mappings) reads them through this.
 */
export function liveEvents<E extends { seq: number; type: string; data: Record<string, unknown> }>(events: E[]): E[] {
  const cuts = supersededRanges(events);
  if (cuts.length === 0) return events;
  return events.filter((e) => !isSuperseded(cuts, e.seq));
}

/** The seq ranges `[from, until)` that takeovers among `events` superseded (see liveEvents). */
export type SupersededRanges = ReadonlyArray<readonly [from: number, until: number]>;

export function supersededRanges(events: ReadonlyArray<{ seq: number; type: string; data: Record<string, unknown> }>): SupersededRanges {
  return events.filter((e) => e.type === 'start' && typeof e.data.supersedesFromSeq === 'number').map((e) => [Number(e.data.supersedesFromSeq), e.seq] as const);
}

export const isSuperseded = (cuts: SupersededRanges, seq: number): boolean => cuts.some(([from, until]) => seq >= from && seq < until);

/**
 * Where a run continued from the checkpoint of `phaseIndex` cuts its stored events: the seq of the
 * first live event past that phase (what the dead instance streamed of the next phase), or
 * undefined when there is none.
 */
export function supersedeFrom(events: StoredRunEvent[], phaseIndex: number): number | undefined {
  return liveEvents(events).find((e) => e.type !== 'start' && Number(e.data.phaseIndex) > phaseIndex)?.seq;
}

/** The answer text of `events` up to and including the phase `phaseIndex`. */
export function textUpTo(events: StoredRunEvent[], phaseIndex: number): string {
  return liveEvents(events)
    .filter((e) => e.type === 'chunk' && Number(e.data.phaseIndex) <= phaseIndex)
    .map((e) => String(e.data.content ?? ''))
    .join('');
}

/**
 * The text a fork's answer starts with: what its ancestors streamed up to the checkpoints it
 * was forked from (the fork's own stream does not repeat it). Empty for an original run.
 */
export async function forkPrefix(
  runs: RunRepository,
  events: RunEventRepository,
  run: Pick<RunEntity, 'parentRequestId' | 'forkedFromPhaseIndex'>,
): Promise<string> {
  const parts: string[] = [];
  let child = run;
  for (let depth = 0; child.parentRequestId && depth < MAX_FORK_DEPTH; depth++) {
    const parent = await runs.findById(child.parentRequestId);
    if (!parent) break;
    parts.unshift(textUpTo(await events.listAfter(parent.requestId, 0, 1_000_000), child.forkedFromPhaseIndex ?? 0));
    child = parent;
  }
  return parts.join('');
}
