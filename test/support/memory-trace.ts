import type { TraceRecord, TraceSink } from '../../src/trace/trace-sink.port';

/** A TraceSink that keeps records in memory, for unit tests. */
export class MemoryTrace implements TraceSink {
  readonly records: TraceRecord[] = [];
  record(e: TraceRecord): void {
    this.records.push(structuredClone(e));
  }
  async flush(): Promise<void> {}
  ofType(type: string): TraceRecord[] {
    return this.records.filter((r) => r.type === type);
  }
}
