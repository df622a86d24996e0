import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { loadRecording, recordingFrames, type WireFrame } from './llm-recordings';
import {
  ollamaCompletionFromSteps,
  ollamaLinesFromSteps,
  openAiCompletionFromSteps,
  openAiSseFrames,
  type RenderOptions,
  type ScriptStep,
} from './llm-wire';
import { scriptedDelay } from './scripted-delay';

export type { ScriptStep, RenderOptions } from './llm-wire';
export type { WireFrame } from './llm-recordings';

/** A request the server received, for assertions (`tool_choice` sent? Authorization header?). */
export interface RecordedRequest {
  method: string;
  /** path without the query string, e.g. `/v1/chat/completions` */
  path: string;
  /** lower-cased header names, as node:http gives them */
  headers: IncomingMessage['headers'];
  /** the body parsed as JSON, or the raw text when it is not JSON */
  body: any;
  rawBody: string;
  /** Date.now() when the request arrived (measures back-off) */
  receivedAt: number;
  /** Date.now() when the client closed the connection before the response was complete (an abort) */
  closedEarlyAt?: number;
  /** frames of a streamed response written so far (how far the model got before an abort) */
  framesSent: number;
}

/**
 * Faults applied to a streamed response, counted in frames (SSE messages / NDJSON lines):
 * - `delayMs`: wait before each frame;
 * - `stallAfter`: send this many frames, then nothing more, keeping the connection open
 *   (the client's idle timeout must fire);
 * - `resetAfter`: send this many frames, then destroy the socket (a connection reset mid-stream).
 */
export interface StreamFaults {
  delayMs?: number;
  stallAfter?: number;
  resetAfter?: number;
}

/**
 * What the server does with one chat request. Build them with {@link respond}.
 * - `stream`: frames as SSE (`text/event-stream`) or NDJSON;
 * - `recording`: a recorded stream, in its own format, verbatim;
 * - `turn`: scripted steps rendered for the route and the request's `stream` flag
 *   (OpenAI SSE or JSON on `/v1/chat/completions`, NDJSON or JSON on `/api/chat`);
 * - `json`: a status and a JSON body (errors: 429 with Retry-After, 500, 400, 401…);
 * - `reset`: destroy the connection without answering;
 * - `hang`: never answer (until the client gives up or the server closes);
 * - `handler`: anything else;
 * - `byRequest`: one of the above, chosen from the request.
 */
export type ScriptedResponse =
  | { kind: 'stream'; format: 'sse' | 'ndjson'; frames: WireFrame[]; faults?: StreamFaults; status?: number; headers?: Record<string, string> }
  | { kind: 'recording'; name: string; faults?: StreamFaults }
  | { kind: 'turn'; steps: ScriptStep[]; faults?: StreamFaults; options?: RenderOptions }
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'reset' }
  | { kind: 'hang' }
  | { kind: 'handler'; handle: (req: RecordedRequest, res: ServerResponse) => void | Promise<void> }
  | { kind: 'byRequest'; pick: (req: RecordedRequest) => ScriptedResponse };

/** Builders of {@link ScriptedResponse}s. */
export const respond = {
  /** A recording from test/fixtures/llm-streams by name (no `.jsonl`). */
  recording: (name: string, faults?: StreamFaults): ScriptedResponse => ({ kind: 'recording', name, faults }),
  /** A scripted model turn (see ScriptStep); renders for whichever API and mode the client used. */
  turn: (steps: ScriptStep[], options?: RenderOptions & { faults?: StreamFaults }): ScriptedResponse => ({
    kind: 'turn',
    steps,
    faults: options?.faults,
    options,
  }),
  /** SSE frames; plain objects are sent as `data: <json>`, strings as `data: <string>`. */
  sse: (frames: Array<WireFrame | Record<string, unknown> | string>, faults?: StreamFaults): ScriptedResponse => ({
    kind: 'stream',
    format: 'sse',
    frames: frames.map(toFrame),
    faults,
  }),
  /** NDJSON lines (Ollama). */
  ndjson: (lines: Array<Record<string, unknown> | string>, faults?: StreamFaults): ScriptedResponse => ({
    kind: 'stream',
    format: 'ndjson',
    frames: lines.map((l) => ({ data: typeof l === 'string' ? l : JSON.stringify(l) })),
    faults,
  }),
  json: (body: unknown, status = 200, headers?: Record<string, string>): ScriptedResponse => ({ kind: 'json', status, body, headers }),
  /**
   * An HTTP error with an OpenAI-style body (`{"error":{"message","type","code"}}`, which Ollama's
   * `{"error": "…"}` readers also understand via `message`). `retryAfter` sets Retry-After
   * (seconds or an HTTP date).
   */
  status: (status: number, options: { retryAfter?: string; message?: string; headers?: Record<string, string> } = {}): ScriptedResponse => ({
    kind: 'json',
    status,
    body: { error: { message: options.message ?? `scripted HTTP ${status}`, type: status === 429 ? 'rate_limit_exceeded' : 'scripted_error', code: status } },
    headers: { ...(options.retryAfter !== undefined ? { 'retry-after': options.retryAfter } : {}), ...options.headers },
  }),
  reset: (): ScriptedResponse => ({ kind: 'reset' }),
  hang: (): ScriptedResponse => ({ kind: 'hang' }),
  handler: (handle: (req: RecordedRequest, res: ServerResponse) => void | Promise<void>): ScriptedResponse => ({ kind: 'handler', handle }),
  /** A response chosen from the request (a model whose answer depends on what it was sent, e.g. whether tools were offered). */
  byRequest: (pick: (req: RecordedRequest) => ScriptedResponse): ScriptedResponse => ({ kind: 'byRequest', pick }),
};

/** `n` copies of a response: `server.enqueue(...times(2, respond.status(500)), respond.recording('x'))`. */
export function times(n: number, response: ScriptedResponse): ScriptedResponse[] {
  return Array.from({ length: n }, () => response);
}

/** An OpenAI SSE stream of scripted steps: `sseFromEvents([{ text: 'Hi' }, { toolCall: { name: 'list_files', args: {} } }])`. */
export function sseFromEvents(steps: ScriptStep[], options?: RenderOptions & { faults?: StreamFaults }): ScriptedResponse {
  return { kind: 'stream', format: 'sse', frames: openAiSseFrames(steps, options), faults: options?.faults };
}

/** An Ollama NDJSON stream of scripted steps. */
export function ndjsonFromEvents(steps: ScriptStep[], options?: RenderOptions & { faults?: StreamFaults }): ScriptedResponse {
  return respond.ndjson(ollamaLinesFromSteps(steps, options), options?.faults);
}

function toFrame(f: WireFrame | Record<string, unknown> | string): WireFrame {
  if (typeof f === 'string') return { data: f };
  if ('comment' in f && typeof f.comment === 'string') return { comment: f.comment };
  if ('data' in f && typeof f.data === 'string' && Object.keys(f).every((k) => k === 'data' || k === 'event')) return f as WireFrame;
  return { data: JSON.stringify(f) };
}

const CHAT_PATHS = new Set(['/v1/chat/completions', '/chat/completions', '/api/chat']);

export interface ReplayServerOptions {
  /** answer to a chat request when the queue is empty (default: a 400 that names the problem) */
  fallback?: ScriptedResponse;
  /** the `/api/show` answer (default: capabilities completion + tools) */
  show?: ScriptedResponse;
}

/**
 * A real local HTTP server (127.0.0.1, random port) that plays the part of an LLM provider for
 * adapter and protocol tests: OpenAI Chat Completions (`/v1/chat/completions`, `/chat/completions`),
 * Ollama (`/api/chat`, `/api/show`). Chat requests consume the queued responses in order — one
 * per request, so a multi-turn conversation or "fail twice then succeed" is a list — and every
 * request is recorded.
 *
 * ```ts
 * const server = await ReplayServer.start();
 * server.enqueue(respond.status(429, { retryAfter: '1' }), respond.recording('openai-gpt4o-single-tool-call'));
 * const adapter = new OpenAiCompatibleAdapter({ baseUrl: server.openAiBaseUrl, ... });
 * …
 * expect(server.chatRequests).toHaveLength(2);
 * await server.close();
 * ```
 */
export class ReplayServer {
  /** every request received, in order */
  readonly requests: RecordedRequest[] = [];
  private readonly queue: ScriptedResponse[] = [];
  private readonly sockets = new Set<Socket>();
  private fallback: ScriptedResponse;
  private show: ScriptedResponse;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    options: ReplayServerOptions,
  ) {
    this.fallback = options.fallback ?? {
      kind: 'json',
      status: 400,
      body: { error: { message: 'ReplayServer: no scripted response left for this request', type: 'replay_server' } },
    };
    this.show = options.show ?? respond.json({ capabilities: ['completion', 'tools'] });
  }

  /** Starts a server on 127.0.0.1 and a free port. */
  static async start(options: ReplayServerOptions = {}): Promise<ReplayServer> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const replay = new ReplayServer(server, `http://127.0.0.1:${port}`, options);
    server.on('connection', (socket) => {
      replay.sockets.add(socket);
      socket.on('close', () => replay.sockets.delete(socket));
    });
    server.on('request', (req, res) => void replay.handle(req, res));
    return replay;
  }

  /** Base URL for the OpenAI-compatible adapter (`…/v1`). */
  get openAiBaseUrl(): string {
    return `${this.url}/v1`;
  }

  /** Base URL for the Ollama adapter. */
  get ollamaBaseUrl(): string {
    return this.url;
  }

  /** Requests to the chat routes only. */
  get chatRequests(): RecordedRequest[] {
    return this.requests.filter((r) => CHAT_PATHS.has(r.path));
  }

  /** Queues responses for the next chat requests (arrays are flattened). */
  enqueue(...responses: Array<ScriptedResponse | ScriptedResponse[]>): this {
    this.queue.push(...responses.flat());
    return this;
  }

  /** Queued responses not consumed yet. */
  get pending(): number {
    return this.queue.length;
  }

  setFallback(response: ScriptedResponse): this {
    this.fallback = response;
    return this;
  }

  setShow(response: ScriptedResponse): this {
    this.show = response;
    return this;
  }

  /** Forgets queued responses and recorded requests (between tests sharing a server). */
  reset(): this {
    this.queue.length = 0;
    this.requests.length = 0;
    return this;
  }

  /** Stops the server, cutting stalled and hanging connections. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    // Take the response synchronously, so concurrent requests consume the queue in arrival order.
    const isChat = req.method === 'POST' && CHAT_PATHS.has(path);
    const scripted = isChat ? (this.queue.shift() ?? this.fallback) : path === '/api/show' ? this.show : undefined;
    const rawBody = await readAll(req);
    let body: unknown = rawBody;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      // not JSON: keep the text
    }
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, rawBody, receivedAt: Date.now(), framesSent: 0 };
    this.requests.push(recorded);
    res.on('close', () => {
      if (!res.writableFinished) recorded.closedEarlyAt = Date.now();
    });
    if (!scripted) {
      sendJson(res, 404, { error: { message: `ReplayServer: no route ${req.method} ${path}` } });
      return;
    }
    try {
      await this.play(scripted, recorded, res, path === '/api/chat');
    } catch {
      res.destroy();
    }
  }

  private async play(r: ScriptedResponse, req: RecordedRequest, res: ServerResponse, ollamaRoute: boolean): Promise<void> {
    const streaming = ollamaRoute ? req.body?.stream !== false : req.body?.stream === true;
    switch (r.kind) {
      case 'json':
        return sendJson(res, r.status, r.body, r.headers);
      case 'reset':
        res.socket?.destroy();
        return;
      case 'hang':
        return;
      case 'handler':
        return r.handle(req, res);
      case 'byRequest':
        return this.play(r.pick(req), req, res, ollamaRoute);
      case 'recording': {
        const rec = loadRecording(r.name);
        return writeStream(res, req, rec.format, recordingFrames(rec), r.faults);
      }
      case 'turn':
        if (ollamaRoute) {
          if (!streaming) return sendJson(res, 200, ollamaCompletionFromSteps(r.steps, r.options));
          return writeStream(res, req, 'ndjson', ollamaLinesFromSteps(r.steps, r.options).map((l) => ({ data: JSON.stringify(l) })), r.faults);
        }
        if (!streaming) return sendJson(res, 200, openAiCompletionFromSteps(r.steps, r.options));
        return writeStream(res, req, 'sse', openAiSseFrames(r.steps, r.options), r.faults);
      case 'stream':
        return writeStream(res, req, r.format, r.frames, r.faults, r.status, r.headers);
    }
  }
}

function readAll(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body ?? null);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function serialize(format: 'sse' | 'ndjson', frame: WireFrame): string {
  if ('comment' in frame) return format === 'sse' ? `: ${frame.comment}\n\n` : '';
  if (format === 'ndjson') return `${frame.data}\n`;
  const event = frame.event ? `event: ${frame.event}\n` : '';
  return `${event}${frame.data
    .split('\n')
    .map((l) => `data: ${l}`)
    .join('\n')}\n\n`;
}

async function writeStream(
  res: ServerResponse,
  recorded: RecordedRequest,
  format: 'sse' | 'ndjson',
  frames: WireFrame[],
  faults: StreamFaults = {},
  status = 200,
  headers: Record<string, string> = {},
): Promise<void> {
  res.writeHead(status, {
    'content-type': format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson',
    'cache-control': 'no-cache',
    ...headers,
  });
  res.flushHeaders();
  for (const [i, frame] of frames.entries()) {
    if (faults.stallAfter !== undefined && i >= faults.stallAfter) return; // leave the connection open
    if (faults.resetAfter !== undefined && i >= faults.resetAfter) {
      // Let the frames already written reach the client before the reset.
      await scriptedDelay(Math.max(faults.delayMs ?? 0, 20));
      res.socket?.destroy();
      return;
    }
    if (faults.delayMs) await scriptedDelay(faults.delayMs);
    if (res.destroyed || res.writableEnded) return; // the client went away
    await new Promise<void>((resolve) => res.write(serialize(format, frame), () => resolve()));
    recorded.framesSent++;
  }
  res.end();
}
