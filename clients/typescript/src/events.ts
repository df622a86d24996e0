import type { components } from './generated/openapi';

type Schemas = components['schemas'];

/** One event of a chat run: `type` is the SSE event name, the rest its data (docs/API.md, "Events"). */
export type RunEvent = Schemas['RunEvent'];
/** The names of the run's events: `start`, `chunk`, …, `done`. */
export type RunEventType = RunEvent['type'];
/** The event of one type: `RunEventOf<'done'>` has `fullContent`, `stopReason`, `usage`, … */
export type RunEventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

/** One event of the tool-only stream (`POST /api/orchestration/execute/stream`): `progress`, then `result`. */
export type ExecuteStreamEvent = Schemas['ExecuteStreamEvent'];

/** The events after which a run's stream ends: nothing follows them on any route. */
export const FINAL_EVENTS: ReadonlySet<string> = new Set<RunEventType>(['done', 'paused']);
