/**
 * The runs whose turn executes on this instance, as a drain and the shutdown need to know them:
 * which could continue elsewhere from a checkpoint, which wait for a person, and how many
 * clients are still being sent what another instance stores for a run that left.
 */
export class ExecutingRuns {
  /**
   * the runs whose turn executes here (not counting the wait of one that lost its lease for the
   * end stored elsewhere), each with whether its protocol continues from a checkpoint elsewhere
   */
  private readonly executing = new Map<string, boolean>();
  /** the approvals each run executing here still waits for (a unified step can ask for several) */
  private readonly waiting = new Map<string, Set<string>>();
  /** the runs of `waiting` whose protocol continues from a checkpoint: on shutdown another instance takes them over */
  private readonly resumable = new Set<string>();
  /** the phase of each executing run's latest stored checkpoint (or of the one it continues from) */
  private readonly checkpointAt = new Map<string, number>();
  /** clients of runs that lost their lease (or were handed over) being sent what the other instance stores */
  private forwarding = 0;

  /** The run's turn starts executing here. */
  started(requestId: string, resumes: boolean): void {
    this.executing.set(requestId, resumes);
  }

  /** The run's turn is over here: nothing of it is remembered. */
  left(requestId: string): void {
    this.executing.delete(requestId);
    this.waiting.delete(requestId);
    this.resumable.delete(requestId);
    this.checkpointAt.delete(requestId);
  }

  /** Whether another instance could continue this run from a checkpoint (a drain hands over only those). */
  continuesElsewhere(requestId: string): boolean {
    return this.executing.get(requestId) === true;
  }

  /** Runs whose turn is executing here and does not wait for a person. */
  get busy(): string[] {
    return [...this.executing.keys()].filter((id) => !this.waiting.has(id));
  }

  /** A client here starts (or stops) being sent what another instance stores for its run. */
  forwardingStarted(): void {
    this.forwarding++;
  }

  forwardingEnded(): void {
    this.forwarding--;
  }

  get forwardingClients(): boolean {
    return this.forwarding > 0;
  }

  /** A checkpoint of the run's phase `phaseIndex` is stored (or the run continues from it). */
  checkpointed(requestId: string, phaseIndex: number): void {
    this.checkpointAt.set(requestId, phaseIndex);
  }

  /**
   * The run waits for a person to decide `approvalId`, in phase `phaseIndex`. It can continue
   * elsewhere only from a checkpoint of the phase it waits in (two-stage's pending call; a unified
   * step's, stored as it asks with what ran); one without is cancelled on shutdown.
   */
  awaits(requestId: string, approvalId: string, phaseIndex: number, resumes: boolean): void {
    const waiting = this.waiting.get(requestId) ?? new Set<string>();
    waiting.add(approvalId);
    this.waiting.set(requestId, waiting);
    if (resumes && this.checkpointAt.get(requestId) === phaseIndex) this.resumable.add(requestId);
  }

  /** `approvalId` was decided; true when the run waits for no other (a unified step may wait for several at once). */
  decided(requestId: string, approvalId: string): boolean {
    const waiting = this.waiting.get(requestId);
    waiting?.delete(approvalId);
    if (waiting?.size) return false;
    this.waiting.delete(requestId);
    this.resumable.delete(requestId);
    this.checkpointAt.delete(requestId);
    return true;
  }

  /**
   * The runs waiting here for a person that another instance could continue from their
   * checkpoint; read as the caller goes (one decided meanwhile is no longer among them).
   */
  *waitingResumable(): Generator<string> {
    for (const id of this.resumable) if (this.waiting.has(id)) yield id;
  }
}
