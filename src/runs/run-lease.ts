import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { RunRepository } from './repositories/run.repository';
import type { RunControlService } from './run-control.service';

/** An identity for this process in leases: host, pid, a random suffix. */
export const INSTANCE_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/**
 * Renews the lease of a run executing here, every third of its length, until the returned
 * function is called. An instance that lost its lease (frozen past it, then swept) stops the
 * turn; its writes are fenced anyway, so it cannot store or send anything more. A renewal also
 * reads the run's stored control flag, for a cancel or pause whose NOTIFY this instance missed.
 */
export function keepLease(runs: RunRepository, control: RunControlService, requestId: string, leaseMs: number): () => void {
  const renew = async () => {
    const held = await runs.renewLease(requestId, INSTANCE_ID, leaseMs).catch(() => ({ control: null }));
    if (!held) control.cancelLocal(requestId, 'lease_lost');
    else if (held.control === 'cancel') control.cancelLocal(requestId, 'cancelled');
    else if (held.control === 'pause') control.pauseLocal(requestId);
  };
  const timer = setInterval(() => void renew(), Math.max(500, leaseMs / 3));
  timer.unref?.();
  return () => clearInterval(timer);
}
