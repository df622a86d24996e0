/**
 * The contract between a run's stream (RunStream, which numbers and batches its events) and
 * the store that commits them (RunEventWriter, behind the executor's lease fence): what a batch
 * is while the run may still add to it, and what the store promises about order and failure.
 * Its own file because both sides and their specs depend on it and neither owns it.
 */
import type { RunClosing, StoredRunEvent } from './repositories/run-event.repository';
import type { SentEvent } from './run-event-bus.service';

/**
 * A run's events handed to the store while the run may still add to them: a batch keeps its
 * place in the store's queue (the arrival of its first event) and takes the events that come
 * until it is closed, so the store serves the runs in the arrival order of their oldest events.
 */
export interface RunBatch {
  readonly requestId: string;
  /** in seq order */
  readonly rows: SentEvent[];
  /** no more events join it: set by the store when a statement takes it, by the run when it is full */
  closed: boolean;
  /** shared by a run's batches: set by the store when one failed, so that none after it is stored (no seq gap) */
  readonly run: { failed: Error | null };
}

/** Where a run's events are stored. */
export interface RunEventStore {
  /**
   * Resolves once the batch is committed. A run's batches are committed in the order they are
   * handed over; once one failed, the later ones reject unstored.
   */
  enqueue(batch: RunBatch): Promise<void>;
  /** Stores the run's last events with its end (`closing`); called once its earlier batches are committed. */
  insertMany(requestId: string, rows: StoredRunEvent[], closing?: RunClosing): Promise<void>;
}
