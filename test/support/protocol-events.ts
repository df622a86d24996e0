import type { ProtocolEvent } from '../../src/orchestration/protocol-event';

/** Runs a protocol generator to its end, collecting its events (`onEvent` sees each as it comes). */
export async function collect(gen: AsyncGenerator<ProtocolEvent>, onEvent?: (e: ProtocolEvent) => void): Promise<ProtocolEvent[]> {
  const out: ProtocolEvent[] = [];
  for await (const e of gen) {
    out.push(e);
    onEvent?.(e);
  }
  return out;
}

export const ofType = <T extends ProtocolEvent['type']>(events: ProtocolEvent[], type: T) =>
  events.filter((e): e is Extract<ProtocolEvent, { type: T }> => e.type === type);

/** The one `done` of a turn, asserted to be unique and last. */
export function doneOf(events: ProtocolEvent[]): Extract<ProtocolEvent, { type: 'done' }> {
  const d = ofType(events, 'done');
  expect(d).toHaveLength(1);
  expect(events[events.length - 1]).toBe(d[0]);
  return d[0];
}

/** The answer text a turn streamed. */
export const textOf = (events: ProtocolEvent[]) => ofType(events, 'chunk').map((c) => c.content).join('');
