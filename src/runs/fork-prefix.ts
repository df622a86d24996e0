import type { RunEntity } from './entities/run.entity';
import type { RunEventRepository, StoredRunEvent } from './repositories/run-event.repository';
import type { RunRepository } from './repositories/run.repository';

/** A chain of forks deeper than this is cut (a guard against a cycle written by hand). */
const MAX_FORK_DEPTH = 64;

/** The answer text of `events` up to and including the phase `phaseIndex`. */
export function textUpTo(events: StoredRunEvent[], phaseIndex: number): string {
  return events
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
