import { Injectable, Logger } from '@nestjs/common';
import { RunRepository } from './repositories/run.repository';
import { INSTANCE_ID } from './run-lease';

/**
 * The runs a draining instance hands over to another one (issue 44, rolling deploys). A run
 * `asked` to go is handed over at its next checkpoint: once the checkpoint is stored the
 * executor stops it there (`atCheckpoint`). A run `cut` is handed over where it is: nothing more
 * of it is stored here (the executor's writes and its answer check `fenced` before the database),
 * its turn is stopped, and the taker continues from its last stored checkpoint. Either way its
 * lease is released (the run stays `running`), so another instance's next sweep takes it over;
 * this instance's client of the run goes on reading what the taker stores (RunFailures.sendStoredEnd).
 */
@Injectable()
export class RunHandover {
  private readonly logger = new Logger('RunHandover');
  private readonly asked = new Set<string>();
  private readonly gone = new Set<string>();

  constructor(private readonly runs: RunRepository) {}

  /** Hand these runs over at their next checkpoint. */
  ask(requestIds: Iterable<string>): void {
    for (const id of requestIds) this.asked.add(id);
  }

  /** Whether nothing more of this run may be stored here (it was handed over, or is being). */
  fenced(requestId: string): boolean {
    return this.gone.has(requestId);
  }

  /**
   * Called by the executor once a checkpoint of the run is stored: true when the run is to stop
   * here (its lease is then released; the executor ends it as a run whose lease was lost).
   */
  async atCheckpoint(requestId: string): Promise<boolean> {
    if (!this.asked.has(requestId)) return false;
    await this.release(requestId);
    return true;
  }

  /** Fences the run at once (before the first await) and releases its lease; the caller stops its turn. */
  async release(requestId: string): Promise<boolean> {
    this.gone.add(requestId);
    this.asked.delete(requestId);
    const released = await this.runs.releaseLease(requestId, INSTANCE_ID, 'running').catch((err: unknown) => {
      this.logger.error(`run ${requestId}: could not release its lease (${(err as Error).message}); it is taken over once the lease expires`);
      return false;
    });
    if (released) this.logger.warn(`run ${requestId}: handed over to another instance (shutdown)`);
    return released;
  }

  /** The run ended here (or went elsewhere): nothing to remember. */
  forget(requestId: string): void {
    this.asked.delete(requestId);
    this.gone.delete(requestId);
  }
}
