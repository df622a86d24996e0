import type { SseEvent } from './sse-client';

/** The events of a run's event stream read to its end as one text (the replay route's whole answer). */
export const parseStream = (text: string): SseEvent[] =>
  text
    .split('\n\n')
    .filter((b) => b.includes('data: '))
    .map((b) => {
      const line = (k: string) => b.split('\n').find((l) => l.startsWith(`${k}: `))?.slice(k.length + 2);
      return { id: line('id'), event: line('event') ?? 'message', data: JSON.parse(line('data') ?? '{}') as Record<string, unknown> };
    });

export const chunks = (events: SseEvent[]) => events.filter((e) => e.event === 'chunk');

/** The answer text per phase, as a stream's chunk events carry it. */
export const textByPhase = (events: SseEvent[]) => {
  const out: Record<string, string> = {};
  for (const e of chunks(events)) out[String(e.data.phaseIndex)] = (out[String(e.data.phaseIndex)] ?? '') + String(e.data.content);
  return out;
};
