import type { LlmStreamEvent } from './llm-adapter.port';

type Delta = Extract<LlmStreamEvent, { type: 'text-delta' | 'reasoning-delta' }>;

/**
 * The events of one read of a model's body with each run of adjacent deltas of one kind (text,
 * or reasoning) joined into one delta: bytes that arrived together (the model sent faster than
 * the run could read, i.e. under load) then cost the run one event, one chunk, one stored row
 * and one write to the client instead of one per delta. Any other event (a tool-call fragment,
 * the finish, an error, a delta of the other kind) ends the run and keeps its place, so order
 * and text are exactly the model's. A read that held one delta yields it as it was: an idle
 * server still sends every delta the moment it is read.
 */
export function* coalesceDeltas(events: Iterable<LlmStreamEvent>): Generator<LlmStreamEvent, void, undefined> {
  let run: Delta | null = null;
  let text = '';
  let joined = false;
  for (const ev of events) {
    if (ev.type === 'text-delta' || ev.type === 'reasoning-delta') {
      if (run !== null && run.type === ev.type) {
        text += ev.text;
        joined = true;
        continue;
      }
      if (run !== null) yield joined ? { type: run.type, text } : run;
      run = ev;
      text = ev.text;
      joined = false;
      continue;
    }
    if (run !== null) {
      yield joined ? { type: run.type, text } : run;
      run = null;
    }
    yield ev;
  }
  if (run !== null) yield joined ? { type: run.type, text } : run;
}
