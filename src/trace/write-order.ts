/**
 * Keeps the trace of each run in the order its records were made when they are stored by more
 * than one writer: the trace writer's own flush and the run-event statements that carry a run's
 * records (TraceWriterService.takeFor). Trace ids (which GET /api/trace orders and pages by) are
 * given as rows are inserted, so a later write of a run's records must not start its statement
 * before an earlier write holding records of the same run is done; writes of other runs do not
 * wait for each other.
 */
export class WriteOrder {
  /** per run, the latest write registered that holds its records */
  private readonly last = new Map<string, Promise<void>>();

  /**
   * Registers a write holding records of `runs`. Returns when it may start (once earlier writes
   * holding records of those runs are done) and `done`, to call once it is (stored or not).
   */
  register(runs: ReadonlySet<string>): { ready: Promise<void>; done: () => void } {
    const earlier: Array<Promise<void>> = [];
    for (const id of runs) {
      const p = this.last.get(id);
      if (p) earlier.push(p);
    }
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    for (const id of runs) this.last.set(id, finished);
    void finished.then(() => {
      for (const id of runs) if (this.last.get(id) === finished) this.last.delete(id);
    });
    return { ready: earlier.length === 0 ? Promise.resolve() : Promise.all(earlier).then(() => undefined), done };
  }

  /** whether a write holding records of one of these runs is registered and not done */
  busy(runs: Iterable<string>): boolean {
    for (const id of runs) if (this.last.has(id)) return true;
    return false;
  }

  /** runs with a write registered and not done (for tests and health) */
  get size(): number {
    return this.last.size;
  }
}
