import type { DbNotifierService } from '../database/db-notifier.service';
import { RUN_EVENTS_CHANNEL, RUN_WATCH_CHANNEL, RunEventBus } from './run-event-bus.service';

/** A notifier that delivers NOTIFYs to the listeners of this one process, and counts them. */
function fakeNotifier() {
  const handlers = new Map<string, Set<(p: string) => void>>();
  const sent: Array<[string, string]> = [];
  const notifier = {
    listen: async (channel: string, h: (p: string) => void) => {
      if (!handlers.has(channel)) handlers.set(channel, new Set());
      handlers.get(channel)!.add(h);
      return () => handlers.get(channel)!.delete(h);
    },
    notify: async (channel: string, payload: string) => {
      sent.push([channel, payload]);
      for (const h of handlers.get(channel) ?? []) h(payload);
    },
  };
  return { notifier: notifier as unknown as DbNotifierService, sent };
}

const ev = (seq: number) => [{ seq, type: 'chunk', data: { seq } }];
// the bus batches NOTIFYs over an interval: the tests move the clock past it (fake timers) instead of waiting it out
const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

describe('RunEventBus', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('announces a streaming run by NOTIFY only while a follower on another instance watches it; its end always', async () => {
    const { notifier, sent } = fakeNotifier();
    const executing = new RunEventBus(notifier);
    const elsewhere = new RunEventBus(notifier); // another instance on the same database
    const events = () => sent.filter(([c]) => c === RUN_EVENTS_CHANNEL).length;

    executing.publish('r1', ev(1));
    await advance(RunEventBus.NOTIFY_INTERVAL_MS + 30);
    executing.publish('r1', ev(2));
    await advance(RunEventBus.NOTIFY_INTERVAL_MS + 30);
    expect(events()).toBe(0);

    let wakes = 0;
    const stop = await elsewhere.watch('r1', () => wakes++);
    expect(sent).toContainEqual([RUN_WATCH_CHANNEL, 'r1']);
    executing.publish('r1', ev(3));
    await advance(RunEventBus.NOTIFY_INTERVAL_MS + 30);
    expect(events()).toBe(1);
    expect(wakes).toBe(1);

    executing.end('r1');
    expect(events()).toBe(2);
    expect(wakes).toBe(2);
    stop();
    await executing.onApplicationShutdown();
  });

  it('a follower on the instance executing the run is woken in-process and announces nothing', async () => {
    const { notifier, sent } = fakeNotifier();
    const bus = new RunEventBus(notifier);
    bus.publish('r2', ev(1));
    let wakes = 0;
    const stop = await bus.watch('r2', () => wakes++);
    bus.publish('r2', ev(2));
    expect(wakes).toBe(1);
    await advance(RunEventBus.NOTIFY_INTERVAL_MS + 30);
    expect(sent).toEqual([]);
    stop();
    await bus.onApplicationShutdown();
  });
});
