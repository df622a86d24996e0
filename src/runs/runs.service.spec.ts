import { firstValueFrom, take, toArray } from 'rxjs';
import { UNBOUNDED_FLOW } from '../common/sse/client-flow';
import type { ExecuteRunParams } from './run-executor.service';
import type { SentEvent } from './run-event-bus.service';
import { RunsService, type StartRunParams } from './runs.service';

/** An executor that delivers two events, then waits until told to end (or cancelled). */
function harness() {
  const cancelled: string[] = [];
  const runs: Array<{ client: ExecuteRunParams['client']; end: () => void }> = [];
  const executor = {
    execute: (p: ExecuteRunParams) =>
      new Promise<void>((resolve) => {
        runs.push({ client: p.client, end: resolve });
        const ev = (seq: number): SentEvent => ({ seq, type: 'chunk', data: { seq } });
        void p.client?.deliver([ev(1), ev(2)]);
      }),
  };
  const control = { cancelLocal: (id: string) => void cancelled.push(id), isAwaiting: () => false };
  const service = new RunsService({} as never, {} as never, executor as never, control as never, {} as never, {} as never, {} as never);
  const params = (detach: boolean): StartRunParams =>
    ({ requestId: 'r1', projectId: 'p', conversationId: 'c', detach, turn: {} as never, opening: [], lastSeq: 0, priorContent: '' }) as StartRunParams;
  return { service, runs, cancelled, params };
}

describe('RunsService.start', () => {
  it('runs on subscription and emits what the run delivers, in order; completes when the run ends', async () => {
    const h = harness();
    const events$ = h.service.start(h.params(false), UNBOUNDED_FLOW, new AbortController().signal);
    expect(h.runs).toHaveLength(0); // nothing runs before a subscriber
    const all = firstValueFrom(events$.pipe(toArray()));
    h.runs[0].end();
    expect((await all).map((e) => e.seq)).toEqual([1, 2]);
    expect(h.cancelled).toEqual([]);
  });

  it('a client that leaves (unsubscribes) cancels the run, unless it is detached', async () => {
    for (const detach of [false, true]) {
      const h = harness();
      await firstValueFrom(h.service.start(h.params(detach), UNBOUNDED_FLOW, new AbortController().signal).pipe(take(1)));
      expect(h.cancelled).toEqual(detach ? [] : ['r1']);
      h.runs[0].end();
    }
  });

  it('a client gone before anyone subscribed still runs the turn, without a client, so it ends', async () => {
    const h = harness();
    const gone = new AbortController();
    h.service.start(h.params(false), UNBOUNDED_FLOW, gone.signal);
    gone.abort();
    expect(h.runs).toHaveLength(1);
    expect(h.runs[0].client).toBeNull(); // the executor cancels a run nobody watches unless detached
  });
});
