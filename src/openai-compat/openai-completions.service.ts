import { Injectable, type MessageEvent } from '@nestjs/common';
import { concatMap, lastValueFrom, map, type Observable, takeWhile } from 'rxjs';
import type { IdempotentSend } from '../common/idempotency/idempotency-key';
import { ApprovalsService } from '../runs/approvals/approvals.service';
import type { ClientFlow } from '../common/sse/client-flow';
import { toMessageEvents, type WireMessage } from '../common/sse/message-events';
import { PROJECT_ID_PATTERN } from '../common/workspace/project-id';
import { AppConfigService } from '../config/app-config.service';
import { ChatService, type ChatProtocol } from '../chat/chat.service';
import { OrchestrationService } from '../orchestration/orchestration.service';
import type { SentEvent } from '../runs/run-event-bus.service';
import { readCompletionRequest, turnInput } from './chat-completion-request';
import { type ChatCompletion, type CompletionFrame, type CompletionSseData, DONE, toCompletion, toCompletionChunks } from './openai-chunks.mapper';
import { invalidRequest, OpenAiError } from './openai-error';
import { UUID_PATTERN as UUID } from '../common/util/uuid';

/** The model names that pick a protocol (with the default model) rather than a model. */
export const MODEL_ALIASES: Record<string, ChatProtocol> = { 'orion-unified': 'unified', 'orion-two-stage': 'two-stage' };

/** The headers an OpenAI client can add to any request (their SDKs take default headers). */
export const ORION_HEADERS = { project: 'x-orion-project', conversation: 'x-orion-conversation', progress: 'x-orion-progress' } as const;


export interface ModelList {
  object: 'list';
  data: Array<{ id: string; object: 'model'; created: number; owned_by: string }>;
}

type Headers = Record<string, string | string[] | undefined>;

/**
 * OpenAI's chat completions over Orion's chat turns: reads the request, starts the turn through
 * ChatService as the chat routes do (same storage, limits, traces, run control), and maps the
 * run's events to OpenAI's chunks or one completion (openai-chunks.mapper.ts).
 */
@Injectable()
export class OpenAiCompletionsService {
  /** `created` of the listed models: when this instance started (they have no date of their own) */
  private readonly startedAt = Math.floor(Date.now() / 1000);

  constructor(
    private readonly chat: ChatService,
    private readonly orchestration: OrchestrationService,
    private readonly config: AppConfigService,
    private readonly approvals: ApprovalsService,
  ) {}

  /** The allowed models, then the protocol aliases (two-stage only while it is enabled). */
  models(): ModelList {
    const ids = [...this.orchestration.modelNames(), ...Object.keys(MODEL_ALIASES).filter((a) => this.aliasEnabled(a))];
    return { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: this.startedAt, owned_by: 'orion' })) };
  }

  model(id: string): ModelList['data'][number] {
    const found = this.models().data.find((m) => m.id === id);
    if (!found) throw new OpenAiError(404, `The model ${JSON.stringify(id)} does not exist`, 'model', 'model_not_found');
    return found;
  }

  /** `stream: true`: the turn as `chat.completion.chunk` messages, then `[DONE]`. */
  async stream(body: unknown, headers: Headers, flow: ClientFlow, clientGone: AbortSignal, idempotency?: IdempotentSend, keyId?: string): Promise<Observable<MessageEvent>> {
    const { events, frame } = await this.start(body, headers, flow, clientGone, true, idempotency, keyId);
    const wire = events.pipe(
      concatMap((e) => {
        // every chunk names the model the turn talks to, which the start event reports
        if (e.type === 'start' && typeof e.data.model === 'string') frame.model = e.data.model;
        return toCompletionChunks(e, frame);
      }),
      map((data: CompletionSseData): WireMessage => (data === DONE ? { type: '', data, json: DONE } : { type: '', data })),
    );
    return toMessageEvents(wire);
  }

  /**
   * `stream: false`: the whole turn as one `chat.completion`; a failed turn is an error answer.
   * A turn that waits for a person is answered at once, not when it is decided (a client would
   * time out first, and retry into a second turn): 409 `approval_required` naming the approval
   * and where to decide it; the run waits on. Both say `x-should-retry: false`: the turn ran.
   */
  async complete(body: unknown, headers: Headers, flow: ClientFlow, clientGone: AbortSignal, idempotency?: IdempotentSend, keyId?: string): Promise<ChatCompletion> {
    const { events, frame } = await this.start(body, headers, flow, clientGone, false, idempotency, keyId);
    const all: SentEvent[] = [];
    let waiting: SentEvent | undefined;
    await lastValueFrom(
      events.pipe(
        concatMap(async (e) => {
          all.push(e);
          // a stored request read back may have waited before: only one still undecided stops here
          if (e.type === 'approval_required' && (await this.approvals.isPending(String(e.data.requestId), String(e.data.approvalId)))) waiting = e;
        }),
        takeWhile(() => !waiting),
      ),
      { defaultValue: undefined },
    );
    if (waiting) throw approvalRequired(waiting, idempotency !== undefined);
    const out = toCompletion(all, frame);
    if ('error' in out) throw new OpenAiError(out.status, out.error.error.message, null, out.error.error.code, { retry: false });
    return out.completion;
  }

  /** Whether a request body asks for a stream (read before the rest is checked). */
  wantsStream(body: unknown): boolean {
    return typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true;
  }

  private async start(
    body: unknown,
    headers: Headers,
    flow: ClientFlow,
    clientGone: AbortSignal,
    streaming: boolean,
    idempotency: IdempotentSend | undefined,
    keyId?: string,
  ): Promise<{ events: Observable<SentEvent>; frame: CompletionFrame }> {
    const req = readCompletionRequest(body);
    const { protocol, model } = this.resolveModel(req.model);
    const projectId = header(headers, ORION_HEADERS.project);
    if (projectId !== undefined && !PROJECT_ID_PATTERN.test(projectId)) {
      throw invalidRequest(`The ${ORION_HEADERS.project} header must be 1-64 characters of A-Z, a-z, 0-9, _ or -`, null, 'invalid_project');
    }
    const conversationId = header(headers, ORION_HEADERS.conversation);
    if (conversationId !== undefined && !UUID.test(conversationId)) throw invalidRequest(`The ${ORION_HEADERS.conversation} header must be a conversation id (a UUID)`, null, 'invalid_conversation');
    const progress = flag(headers, ORION_HEADERS.progress);
    const input = turnInput(req.messages);
    const events = await this.chat.send(
      protocol,
      { projectId, conversationId, content: input.content, options: model === undefined ? {} : { model } },
      flow,
      clientGone,
      // a named conversation brings its stored history; otherwise the request's messages are it
      { ...(conversationId ? {} : { history: input.history }), instructions: input.instructions, idempotency, keyId },
    );
    const includeUsage = streaming && req.stream_options?.include_usage === true;
    return { events, frame: { created: Math.floor(Date.now() / 1000), model: model ?? this.orchestration.defaultModel(), includeUsage, progress } };
  }

  /** An alias picks the protocol with the default model; an allowed model runs on unified. */
  resolveModel(name: string): { protocol: ChatProtocol; model?: string } {
    if (Object.hasOwn(MODEL_ALIASES, name) && this.aliasEnabled(name)) return { protocol: MODEL_ALIASES[name] };
    if (this.orchestration.allowsModel(name)) return { protocol: 'unified', model: name };
    const known = this.models().data.map((m) => m.id);
    throw invalidRequest(`The model ${JSON.stringify(name)} does not exist or you do not have access to it (models: ${known.join(', ')})`, 'model', 'model_not_found');
  }

  private aliasEnabled(alias: string): boolean {
    return MODEL_ALIASES[alias] !== 'two-stage' || this.config.get('TWO_STAGE_ENABLED');
  }
}

/** One request header's value (absent or empty: undefined); sent twice is a 400 in OpenAI's shape. */
export function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  if (Array.isArray(v)) throw invalidRequest(`The ${name} header must be sent once`, null, 'invalid_header');
  return v === undefined || v === '' ? undefined : v;
}

function flag(headers: Headers, name: string): boolean {
  const v = header(headers, name)?.toLowerCase();
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw invalidRequest(`The ${name} header must be true or false`, null, 'invalid_header');
}

/**
 * 409 approval_required: the turn waits for a person. Names the approval, the route that decides
 * it and how to get the answer once decided; `x-should-retry: false`, since a retry without the
 * key would start a second turn.
 */
function approvalRequired(e: SentEvent, keyed: boolean): OpenAiError {
  const d = e.data;
  const decide = `POST /api/chat/runs/${String(d.requestId)}/approvals/${String(d.approvalId)}`;
  const answer = keyed
    ? 'send this request again with the same Idempotency-Key for its answer'
    : `read its answer with GET /api/chat/runs/${String(d.requestId)}/events or GET /api/chat/conversations/${String(d.conversationId)}/messages (a request sent with an Idempotency-Key gets it by being sent again)`;
  return new OpenAiError(
    409,
    `The turn waits for approval of ${String(d.tool)} (approvalId ${String(d.approvalId)}); decide it with ${decide} {"decision":"approve"} or {"decision":"deny"}. The run goes on once it is decided: ${answer}`,
    null,
    'approval_required',
    {
      retry: false,
      orion: { request_id: d.requestId, conversation_id: d.conversationId, approval_id: d.approvalId, tool: d.tool, arguments: d.arguments, expires_at: d.expiresAt, decide },
    },
  );
}
