/**
 * The events of a run for the client that started it, as the run delivers them: one batch at a
 * time, at the pace of the client's socket (ClientFlow). A client that leaves cancels the run,
 * unless it is detached or waits for a person.
 */
import type { ClientFlow } from '../common/sse/client-flow';
import { BatchHandoff } from './batch-handoff';
import type { RunControlService } from './run-control.service';
import type { SentEvent } from './run-event-bus.service';
import type { ExecuteRunParams } from './run-params';

/**
 * The generator ends with the run (its error is the stream's), or when its client leaves
 * (`left`): then, unless the run is detached, the run is cancelled at once.
 */
export async function* watchRun(
  p: Pick<ExecuteRunParams, 'requestId' | 'detach'>,
  flow: ClientFlow,
  left: AbortSignal,
  run: (client: NonNullable<ExecuteRunParams['client']>) => Promise<void>,
  ended: () => boolean,
  control: Pick<RunControlService, 'isAwaiting' | 'cancelLocal'>,
): AsyncGenerator<SentEvent> {
  const handoff = new BatchHandoff<SentEvent>();
  const deliver = async (events: SentEvent[]) => {
    flow.hold?.();
    await handoff.put(events);
    await flow.ready();
  };
  const outcome = run({ deliver, gone: left }).then(() => null, (err: unknown) => ({ err }));
  void outcome.then(() => handoff.close());
  const leave = () => {
    handoff.close();
    // a run waiting for a person stays: the decision may come from another device, and the
    // run then goes on without a client (followed through the reconnect route)
    if (!ended() && !p.detach && !control.isAwaiting(p.requestId)) control.cancelLocal(p.requestId, 'client_disconnected');
  };
  left.addEventListener('abort', leave, { once: true });
  try {
    for (let batch = await handoff.take(); batch; batch = await handoff.take()) yield* batch;
    const failed = ended() ? await outcome : null;
    if (failed) throw failed.err;
  } finally {
    left.removeEventListener('abort', leave);
    handoff.close();
  }
}
