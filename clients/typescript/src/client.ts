import createClient, { type Client } from 'openapi-fetch';
import type { Approval, ApprovalDecision } from './approvals';
import { OrionError } from './errors';
import type { components, paths } from './generated/openapi';
import type { ExecuteStreamEvent } from './events';
import { messages, RunEventStream, type StreamExtent, type StreamOptions, type StreamTransport } from './run-stream';

type Schemas = components['schemas'];
export type SendMessage = Schemas['SendMessageDto'];
export type Run = Schemas['RunDto'];
export type Conversation = Schemas['ConversationDto'];
export type ChatMessage = Schemas['ChatMessageDto'];
export type ExecuteTools = Schemas['ExecuteToolsDto'];
export type ToolCallsResult = Schemas['ToolCallsResultDto'];

export interface OrionOptions {
  /** where the service answers, e.g. `http://localhost:3000` */
  baseUrl: string;
  /** one of the service's keys (API_KEYS or a database key), sent as `Authorization: Bearer` */
  apiKey?: string;
  /** the fetch to use (default: the global one) */
  fetch?: typeof fetch;
}

/**
 * The openapi-fetch client of every JSON route (`orion.api`). Named here so that the emitted
 * declarations refer to it by this name: inferred, tsc 6 wrote `createClient.Client<…>` (the
 * default import as a namespace), which TypeScript 7 rejects (TS2503).
 */
export type OrionApi = Client<paths>;

/** Which chat route a message goes to: `unified` (`/api/chat/messages`) or `two-stage` (`/api/chat/messages_two_stage`). */
export type ChatRoute = 'unified' | 'two-stage';

/** A JSON answer of openapi-fetch: its data, or an OrionError with the status and error body. */
async function unwrap<T>(pending: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) throw OrionError.fromBody(response.status, error);
  return data as T;
}

/**
 * A client of one Orion service. The JSON routes go through openapi-fetch with the types
 * generated from docs/openapi.json (`orion.api` is that client, for any route not wrapped here);
 * the streaming routes give a {@link RunEventStream} of typed events.
 */
export function createOrion(options: OrionOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const auth: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  const api: OrionApi = createClient<paths>({ baseUrl, headers: auth, fetch: (req: Request) => doFetch(req) });

  const request: StreamTransport['request'] = (path, init) =>
    doFetch(`${baseUrl}${path}`, {
      method: init.method,
      headers: { ...auth, accept: 'text/event-stream', ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
      signal: init.signal,
    });

  /** A route's JSON answer, for the routes typed by hand (approvals: see approvals.ts). */
  const json = async <T>(path: string, method: 'GET' | 'POST', body?: unknown): Promise<T> => {
    const res = await doFetch(`${baseUrl}${path}`, {
      method,
      headers: { ...auth, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw await OrionError.from(res);
    return (await res.json()) as T;
  };

  const runs = {
    /** status, counters and checkpoints of a run */
    get: (requestId: string): Promise<Run> => unwrap(api.GET('/api/chat/runs/{requestId}', { params: { path: { requestId } } })),
    /** cancels a run: its stream ends with `done {stopReason: "cancelled"}` (`409 run_finished` when it already ended) */
    cancel: (requestId: string): Promise<Run> => unwrap(api.POST('/api/chat/runs/{requestId}/cancel', { params: { path: { requestId } } })),
    /** pauses a two-stage run at its next tool result: its stream ends with `paused` */
    pause: (requestId: string): Promise<Run> => unwrap(api.POST('/api/chat/runs/{requestId}/pause', { params: { path: { requestId } } })),
  };

  const transport: StreamTransport = { request, runs };
  const stream = (path: string, method: 'GET' | 'POST', body: unknown, opts?: StreamOptions, headers?: Record<string, string>, extent?: StreamExtent) =>
    new RunEventStream(transport, (signal) => request(path, { method, body, headers, signal }), opts, extent);
  const runPath = (requestId: string) => `/api/chat/runs/${encodeURIComponent(requestId)}`;

  return {
    /** the openapi-fetch client itself: every JSON route of docs/openapi.json, typed */
    api,
    chat: {
      /**
       * Sends a message and streams the turn: `for await (const event of orion.chat.send({content}))`.
       * `route: 'two-stage'` sends it to the two-stage route (TWO_STAGE_ENABLED=true), which can be paused.
       */
      send: (body: SendMessage, opts: StreamOptions & { route?: ChatRoute } = {}): RunEventStream =>
        stream(opts.route === 'two-stage' ? '/api/chat/messages_two_stage' : '/api/chat/messages', 'POST', body, opts),
    },
    runs: {
      ...runs,
      /** resumes a paused two-stage run from its latest checkpoint; seq goes on after the paused stream's */
      resume: (body: { requestId: string; resumeFromPhaseIndex: number }, opts?: StreamOptions): RunEventStream =>
        stream('/api/chat/messages_two_stage/resume', 'POST', body, opts),
      /** a new run from a checkpoint of a paused or ended two-stage run (its own requestId; start.parentRequestId names this one) */
      fork: (requestId: string, body: { fromPhaseIndex: number }, opts?: StreamOptions): RunEventStream => stream(`${runPath(requestId)}/fork`, 'POST', body, opts),
      /**
       * a run's events after `lastEventId` (default: all of them), then its live events until it ends:
       * through a `paused` and the resume that followed it to `done`; a run that is paused and not
       * resumed yet ends the stream at its `paused`
       */
      events: (requestId: string, opts: StreamOptions & { lastEventId?: number } = {}): RunEventStream =>
        stream(`${runPath(requestId)}/events`, 'GET', undefined, opts, { 'last-event-id': String(opts.lastEventId ?? 0) }, 'run'),
    },
    approvals: {
      /** the run's approvals, waiting and decided */
      list: (requestId: string): Promise<Approval[]> => json(`${runPath(requestId)}/approvals`, 'GET'),
      /** approves or denies a call that waits (an `approval_required` event's approvalId) */
      decide: (requestId: string, approvalId: string, decision: ApprovalDecision): Promise<Approval> =>
        json(`${runPath(requestId)}/approvals/${encodeURIComponent(approvalId)}`, 'POST', decision),
    },
    conversations: {
      list: (query: { projectId?: string } = {}): Promise<Conversation[]> => unwrap(api.GET('/api/chat/conversations', { params: { query } })),
      messages: (id: string): Promise<ChatMessage[]> => unwrap(api.GET('/api/chat/conversations/{id}/messages', { params: { path: { id } } })),
      rename: (id: string, title: string) => unwrap(api.PATCH('/api/chat/conversations/{id}', { params: { path: { id } }, body: { title } })),
      settings: (id: string, body: Schemas['ConversationSettingsDto']) => unwrap(api.PATCH('/api/chat/conversations/{id}/settings', { params: { path: { id } }, body })),
      delete: (id: string): Promise<void> => unwrap(api.DELETE('/api/chat/conversations/{id}', { params: { path: { id } } })).then(() => undefined),
    },
    knowledge: {
      ingest: (body: Schemas['IngestKnowledgeDto']) => unwrap(api.POST('/api/knowledge/ingest', { body })),
      modules: (query: { projectId?: string } = {}) => unwrap(api.GET('/api/knowledge/modules', { params: { query } })),
      search: (query: { q: string; projectId?: string; topK?: number }) => unwrap(api.GET('/api/knowledge/search', { params: { query } })),
    },
    tools: {
      list: (query: { projectId?: string } = {}) => unwrap(api.GET('/api/tools', { params: { query } })),
      /** tool-only orchestration: one model decision over the tools, executed, no answer text */
      execute: (body: ExecuteTools): Promise<ToolCallsResult> => unwrap(api.POST('/api/orchestration/execute', { body })),
      /**
       * The same as a stream: `progress` events (PrepareTools, LLMDecision, ExecuteTool, Finished),
       * then one `result` (the ToolCallsResult). Not a run: nothing to reconnect to, leaving stops it.
       */
      executeStream: async function* (body: ExecuteTools, opts: { signal?: AbortSignal } = {}): AsyncGenerator<ExecuteStreamEvent> {
        const connection = new AbortController();
        const signal = opts.signal ? AbortSignal.any([opts.signal, connection.signal]) : connection.signal;
        try {
          const res = await request('/api/orchestration/execute/stream', { method: 'POST', body, signal });
          if (!res.ok) throw await OrionError.from(res);
          for await (const message of messages(res, signal)) {
            if (message.event) yield { type: message.event, ...JSON.parse(message.data) } as ExecuteStreamEvent;
          }
        } finally {
          connection.abort();
        }
      },
    },
  };
}

export type Orion = ReturnType<typeof createOrion>;
