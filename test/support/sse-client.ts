import { request } from 'node:http';
import { SseReader } from './sse-reader';

export interface SseEvent {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

export interface SseResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  events: SseEvent[];
  comments: string[];
  /** the raw body when the response was not an event stream (JSON errors) */
  body: string;
}

/** Parses Orion's event stream incrementally: the shared SseReader's messages with their JSON `data` parsed. */
export class SseParser {
  private readonly reader = new SseReader();
  readonly comments: string[] = this.reader.comments;

  push(text: string | Uint8Array): SseEvent[] {
    return this.reader.push(text).map((f) => ({ id: f.id, event: f.event, data: JSON.parse(f.data) as Record<string, unknown> }));
  }
}

export interface SseRequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  /** called per event; return 'close' to drop the connection there */
  onEvent?: (e: SseEvent, all: SseEvent[]) => void | 'close';
  timeoutMs?: number;
}

/** Sends a request and reads the whole SSE response over a real socket. */
export function sse(url: string, opts: SseRequestOptions = {}): Promise<SseResponse> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method ?? (payload ? 'POST' : 'GET'),
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), accept: 'text/event-stream', ...opts.headers },
      },
      (res) => {
        const parser = new SseParser();
        const events: SseEvent[] = [];
        let body = '';
        let settled = false;
        const finish = () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, events, comments: parser.comments, body });
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) return;
          for (const e of parser.push(chunk)) {
            events.push(e);
            if (opts.onEvent?.(e, events) === 'close') {
              req.destroy();
              finish();
              return;
            }
          }
        });
        res.on('end', finish);
        res.on('close', finish);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`SSE request to ${url} timed out`));
    }, opts.timeoutMs ?? 20_000);
    req.on('error', (e) => {
      clearTimeout(timer);
      if ((e as NodeJS.ErrnoException).code === 'ECONNRESET') return;
      reject(e);
    });
    if (payload) req.write(payload);
    req.end();
  });
}

const PHASES = ['action_phase', 'tool_phase', 'complete'];
const STOP_REASONS = ['final_answer', 'cycle_budget', 'duplicate_limit', 'no_progress', 'content_loop', 'max_iterations', 'token_budget', 'cancelled', 'error'];
const NOTICE_CODES = ['duplicate_tool_call', 'duplicate_limit_reached', 'cycle_budget_reached', 'invalid_tool_arguments', 'no_progress', 'content_loop'];
const str = (v: unknown) => typeof v === 'string';
const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const bool = (v: unknown) => typeof v === 'boolean';

/**
 * docs/API.md's event table as checks: the fields each event type must carry. Orion may add fields
 * (the contract says add, never rename or drop), so only presence and types are checked.
 */
const EVENT_FIELDS: Record<string, (d: Record<string, unknown>) => string | null> = {
  start: (d) => (['two-stage', 'unified', 'command'].includes(d.protocol as string) && 'userMessageId' in d ? null : 'protocol, userMessageId'),
  phase: (d) => (['start', 'end'].includes(d.status as string) && (d.reason === undefined || str(d.reason)) ? null : 'status start|end, reason?'),
  chunk: (d) => (str(d.content) ? null : 'content'),
  tool_calls: (d) =>
    Array.isArray(d.calls) && (d.calls as Array<Record<string, unknown>>).every((c) => str(c.id) && str(c.name) && str(c.arguments)) ? null : 'calls[{id, name, arguments: string}]',
  tool_progress: (d) =>
    str(d.tool) && str(d.callId) && ['calling', 'completed', 'failed', 'refused'].includes(d.action as string) && 'params' in d && bool(d.isError) ? null : 'tool, callId, action, params, isError',
  tool_phase: (d) => (str(d.toolId) && str(d.stage) && str(d.message) ? null : 'toolId, stage, message'),
  sources: (d) =>
    Array.isArray(d.data) && Array.isArray(d.sourceTypes) && num(d.ragCount) && num(d.webCount) && 'confidence' in d ? null : 'data[], sourceTypes[], ragCount, webCount, confidence',
  notice: (d) => (NOTICE_CODES.includes(d.code as string) && str(d.message) ? null : 'code, message'),
  error: (d) => (str(d.code) && str(d.message) && bool(d.retryable) ? null : 'code, message, retryable'),
  paused: (d) => (num(d.resumeFromPhaseIndex) ? null : 'resumeFromPhaseIndex'),
  approval_required: (d) => (str(d.approvalId) && str(d.tool) && str(d.callId) && 'arguments' in d && str(d.reason) && str(d.expiresAt) ? null : 'approvalId, tool, callId, arguments, reason, expiresAt'),
  approval_decided: (d) =>
    str(d.approvalId) && ['approve', 'deny'].includes(d.decision as string) && bool(d.edited) && (d.by === null || str(d.by)) ? null : 'approvalId, decision, edited, by',
  done: (d) =>
    str(d.fullContent) && 'messageId' in d && STOP_REASONS.includes(d.stopReason as string) && typeof d.usage === 'object' && d.usage !== null ? null : 'fullContent, messageId, stopReason, usage',
};

/** Asserts docs/API.md's envelope invariants and each event type's fields. */
export function checkEnvelope(events: SseEvent[]): void {
  events.forEach((e, i) => {
    const d = e.data;
    if (Number(e.id) !== d.seq) throw new Error(`event ${i}: id ${e.id} != seq ${d.seq}`);
    if (i > 0 && (d.seq as number) !== (events[i - 1].data.seq as number) + 1) throw new Error(`gap before seq ${d.seq}`);
    for (const k of ['requestId', 'projectId', 'conversationId', 'seq', 'phase', 'phaseIndex', 'cycleIndex']) {
      if (d[k] === undefined) throw new Error(`event ${i} (${e.event}) lacks ${k}`);
    }
    if (!PHASES.includes(d.phase as string)) throw new Error(`event ${i} (${e.event}) has phase ${String(d.phase)}`);
    if (!num(d.phaseIndex) || !num(d.cycleIndex)) throw new Error(`event ${i} (${e.event}) has non-numeric phaseIndex/cycleIndex`);
    const check = EVENT_FIELDS[e.event];
    if (!check) throw new Error(`event ${i}: unknown event type ${e.event}`);
    const missing = check(d);
    if (missing) throw new Error(`event ${i} (${e.event}) does not carry ${missing}: ${JSON.stringify(d).slice(0, 300)}`);
  });
  // exactly one done per turn, last; a paused stream ends there, or (a run's events replayed
  // across a resume) is followed by the resumed stream's start
  const done = events.filter((e) => e.event === 'done');
  if (done.length > 1) throw new Error(`${done.length} done events`);
  if (done.length === 1 && done[0] !== events[events.length - 1]) throw new Error('done is not the last event');
  events.forEach((e, i) => {
    const next = events[i + 1];
    if (e.event === 'paused' && next && !(next.event === 'start' && next.data.resumed === true)) {
      throw new Error(`paused at seq ${e.data.seq} is followed by ${next.event}, not a resumed start`);
    }
  });
}
