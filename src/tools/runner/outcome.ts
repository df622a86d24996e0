import { ToolFailure, type ToolOutcome } from '../tool-definition';

/** Longest error message handed to the model (a tool may throw a whole HTML page). */
export const ERROR_MESSAGE_MAX_CHARS = 2000;

const OUTCOMES: ReadonlySet<string> = new Set<ToolOutcome>(['validation_error', 'unavailable', 'rate_limited', 'timeout', 'exception']);

/** How `execute` ended: a value, or a throw (the deadline's timeout, the caller's cancel, or the tool's own). */
export type Execution =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown; timedOut: boolean; cancelled: boolean };

/** A failed call as the model will be told: its outcome, a message, optional details. */
export interface FailedOutcome {
  outcome: Exclude<ToolOutcome, 'success'>;
  message: string;
  details?: unknown;
}

/** What a throw means: cancelled before timed out before the tool's own ToolFailure, a 429, or an exception. */
export function classifyThrow(toolName: string, timeoutMs: number, ex: Extract<Execution, { kind: 'threw' }>): FailedOutcome {
  if (ex.cancelled) return { outcome: 'cancelled', message: 'cancelled' };
  if (ex.timedOut) return { outcome: 'timeout', message: `tool "${toolName}" timed out after ${timeoutMs} ms` };
  const err = ex.error as Record<string, unknown> | null | undefined;
  if (err instanceof ToolFailure || (err?.name === 'ToolFailure' && OUTCOMES.has(String(err.outcome)))) {
    const f = err as unknown as ToolFailure;
    const outcome = OUTCOMES.has(f.outcome) ? f.outcome : 'exception';
    return { outcome: outcome as FailedOutcome['outcome'], message: errorMessage(f), details: f.details };
  }
  if (isRateLimit(err)) return { outcome: 'rate_limited', message: errorMessage(err) };
  return { outcome: 'exception', message: errorMessage(err) };
}

/** The message of anything thrown, never its stack; redaction of known secrets happens in `fail`. */
export function errorMessage(err: unknown): string {
  let msg: string;
  try {
    if (err instanceof Error) msg = err.message || err.name || 'error';
    else if (typeof err === 'string') msg = err;
    else if (err && typeof err === 'object' && typeof (err as { message?: unknown }).message === 'string') msg = (err as { message: string }).message;
    else if (err === undefined || err === null) msg = `tool threw ${String(err)}`;
    else msg = `tool threw ${String(err)}`;
  } catch {
    msg = 'tool threw a value that cannot be described';
  }
  return msg.length > ERROR_MESSAGE_MAX_CHARS ? `${msg.slice(0, ERROR_MESSAGE_MAX_CHARS)}…` : msg;
}

function isRateLimit(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  try {
    const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown; response?: { status?: unknown } };
    if (e.status === 429 || e.statusCode === 429 || e.code === 429 || e.response?.status === 429) return true;
    return typeof e.name === 'string' && /rate.?limit/i.test(e.name);
  } catch {
    return false;
  }
}
