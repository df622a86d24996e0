/**
 * The parts of the storage worker's pass that need no database (issue 43): the bounds a
 * retention statement is given, and how a pass runs bounded batches until none is left.
 */

/** What one retention statement is given: the deployment's value (-1: kept for ever) and the smallest value any project has. */
export interface RetentionBounds {
  deploymentMs: number;
  minMs: number;
}

/**
 * The bounds of one kind of retention, from the deployment's value (null: kept for ever) and each
 * project's own (null: the deployment's, -1: kept for ever); null when nothing expires at all
 * (the statement is not run).
 */
export function retentionBounds(deploymentMs: number | null, projectMs: ReadonlyArray<number | null>): RetentionBounds | null {
  const d = deploymentMs ?? -1;
  const effective = [d, ...projectMs.map((v) => v ?? d)].filter((v) => v > 0);
  if (effective.length === 0) return null;
  return { deploymentMs: d, minMs: Math.min(...effective) };
}

/** Why a run of batches stopped. */
export type BatchesEnd = 'done' | 'locked' | 'stopped' | 'limit';

/**
 * Runs `batch` until one touches fewer than `size` rows (nothing more is due), another instance
 * holds the lock (`batch` answers undefined), `stopped()` says so (shutdown) or `maxBatches` ran
 * (the next pass goes on). Between batches the event loop is let go, so turns run meanwhile.
 */
export async function runBatches(batch: () => Promise<number | undefined>, size: number, opts: { maxBatches: number; stopped: () => boolean; pause?: () => Promise<void> }): Promise<{ end: BatchesEnd; batches: number; rows: number }> {
  let batches = 0;
  let rows = 0;
  const pause = opts.pause ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
  for (;;) {
    if (opts.stopped()) return { end: 'stopped', batches, rows };
    if (batches >= opts.maxBatches) return { end: 'limit', batches, rows };
    const n = await batch();
    if (n === undefined) return { end: 'locked', batches, rows };
    batches++;
    rows += n;
    if (n < size) return { end: 'done', batches, rows };
    await pause();
  }
}
