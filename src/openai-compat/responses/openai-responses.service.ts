import { Inject, Injectable, type MessageEvent } from '@nestjs/common';
import { concatMap, lastValueFrom, map, type Observable, takeWhile } from 'rxjs';
import { ChatService } from '../../chat/chat.service';
import { PROJECT_OWNERSHIP, type ProjectOwnershipPort } from '../../common/auth/project-ownership.port';
import type { IdempotentSend } from '../../common/idempotency/idempotency-key';
import { type ClientFlow, UNBOUNDED_FLOW } from '../../common/sse/client-flow';
import { toMessageEvents, type WireMessage } from '../../common/sse/message-events';
import { PROJECT_ID_PATTERN } from '../../common/workspace/project-id';
import { ApprovalsService } from '../../runs/approvals/approvals.service';
import type { SentEvent } from '../../runs/run-event-bus.service';
import { RunEventsService } from '../../runs/run-events.service';
import { liveEvents } from '../../runs/fork-prefix';
import { RunRepository } from '../../runs/repositories/run.repository';
import { RunsService } from '../../runs/runs.service';
import { header, OpenAiCompletionsService, ORION_HEADERS } from '../openai-completions.service';
import { invalidRequest, OpenAiError } from '../openai-error';
import { readResponsesRequest } from './responses-request';
import { type ResponseEvent, type ResponseFrame, ResponseProjection, requestIdOf, responseId } from './responses.mapper';

type Headers = Record<string, string | string[] | undefined>;
/** The header that shows raw tool output in `mcp_call` items (the chat routes' `debugShowToolResults`). */
export const TOOL_RESULTS_HEADER = 'x-orion-tool-results';
/** `POST /v1/responses/{id}/cancel` answers once the run has ended, waiting at most this long. */
const CANCEL_WAIT_MS = 15_000;

/**
 * OpenAI's Responses API over Orion's chat turns, as `/v1/chat/completions` is: the request
 * starts a turn through ChatService (same storage, limits, traces, run control) and the run's
 * events are mapped by ResponseProjection. A response is its run: retrieve, cancel and a
 * resumed stream read the stored events, so they work on any instance.
 */
@Injectable()
export class OpenAiResponsesService {
  constructor(
    private readonly chat: ChatService,
    private readonly completions: OpenAiCompletionsService,
    private readonly runs: RunsService,
    private readonly runEvents: RunEventsService,
    private readonly runRows: RunRepository,
    private readonly approvals: ApprovalsService,
    @Inject(PROJECT_OWNERSHIP) private readonly ownership: ProjectOwnershipPort,
  ) {}

  wantsStream(body: unknown): boolean {
    return typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true;
  }

  /** `stream: true`: the Responses stream events of the new turn. */
  async stream(body: unknown, headers: Headers, flow: ClientFlow, clientGone: AbortSignal, idempotency?: IdempotentSend, keyId?: string): Promise<Observable<MessageEvent>> {
    const { events, projection } = await this.start(body, headers, flow, clientGone, idempotency, keyId);
    return wire(events.pipe(concatMap((e) => projection.push(e))));
  }

  /**
   * `stream: false`: the response once the turn has ended; `background: true` answers at once
   * (status `in_progress`); a turn that waits for a person answers with its `mcp_approval_request`
   * item and status `in_progress`, and the run waits on.
   */
  async create(body: unknown, headers: Headers, clientGone: AbortSignal, idempotency?: IdempotentSend, keyId?: string): Promise<Record<string, unknown>> {
    const { events, projection, background } = await this.start(body, headers, UNBOUNDED_FLOW, clientGone, idempotency, keyId);
    let waiting = false;
    await lastValueFrom(
      events.pipe(
        concatMap(async (e) => {
          projection.push(e);
          if (background && e.type === 'start') waiting = true;
          // a stored request read back may have waited before: only one still undecided stops here
          if (e.type === 'approval_required' && (await this.approvals.isPending(String(e.data.requestId), String(e.data.approvalId)))) waiting = true;
        }),
        takeWhile(() => !waiting),
      ),
      { defaultValue: undefined },
    );
    return projection.snapshot();
  }

  /** `GET /v1/responses/{id}`: the response as its run's stored events say now. */
  async retrieve(id: string, projectIds: (p: string) => boolean): Promise<Record<string, unknown>> {
    const { requestId, frame } = await this.found(id, projectIds);
    return this.stored(requestId, frame);
  }

  /** `GET /v1/responses/{id}?stream=true&starting_after=N`: the response's events after N, then live until it ends. */
  async resume(id: string, startingAfter: number, projectIds: (p: string) => boolean, stop: AbortSignal, flow: ClientFlow): Promise<Observable<MessageEvent>> {
    const { requestId, frame } = await this.found(id, projectIds);
    const projection = new ResponseProjection(frame);
    const events = this.runEvents.follow(requestId, 0, flow, stop);
    return wire(events.pipe(concatMap((e) => projection.push(e).filter((r) => r.sequence_number > startingAfter))));
  }

  /** `POST /v1/responses/{id}/cancel`: Orion's cancel; the response once its run has ended. */
  async cancel(id: string, projectIds: (p: string) => boolean): Promise<Record<string, unknown>> {
    const { requestId, frame, status } = await this.found(id, projectIds);
    if (status === 'running' || status === 'awaiting_approval') {
      await this.runs.cancel(requestId);
      const projection = new ResponseProjection(frame);
      for await (const e of this.runEvents.untilEnd(requestId, 0, AbortSignal.timeout(CANCEL_WAIT_MS))) projection.push(e);
      return projection.snapshot();
    }
    if (status === 'paused') throw invalidRequest(`Response ${id} is paused; resume or fork it on /api/chat/runs`, 'response_id', 'response_not_cancellable');
    return this.stored(requestId, frame);
  }

  /** The response as the run's stored events say now. */
  private async stored(requestId: string, frame: ResponseFrame): Promise<Record<string, unknown>> {
    const projection = new ResponseProjection(frame);
    // what a takeover superseded is not part of the response (issue 44)
    for (const e of liveEvents(await this.runEvents.stored(requestId))) projection.push(e);
    return projection.snapshot();
  }

  /** A response of another project reads as unknown, as on every route. */
  private async found(id: string, canUse: (p: string) => boolean): Promise<{ requestId: string; frame: ResponseFrame; status: string }> {
    const requestId = requestIdOf(id);
    const run = requestId ? await this.runRows.findById(requestId) : null;
    if (!requestId || !run || !canUse(run.projectId)) throw new OpenAiError(404, `No response found with id '${id}'.`, 'response_id', 'response_not_found');
    const options = (run.options ?? {}) as { model?: string; detach?: boolean };
    return {
      requestId,
      status: run.status,
      frame: {
        requestId,
        createdAt: Math.floor(run.createdAt.getTime() / 1000),
        model: options.model ?? '',
        instructions: null,
        metadata: {},
        previousResponseId: null,
        background: options.detach === true,
      },
    };
  }

  private async start(body: unknown, headers: Headers, flow: ClientFlow, clientGone: AbortSignal, idempotency: IdempotentSend | undefined, keyId?: string) {
    const req = readResponsesRequest(body);
    const { protocol, model } = this.completions.resolveModel(req.model);
    const projectId = header(headers, ORION_HEADERS.project) ?? 'default';
    if (!PROJECT_ID_PATTERN.test(projectId)) throw invalidRequest(`The ${ORION_HEADERS.project} header must be 1-64 characters of A-Z, a-z, 0-9, _ or -`, null, 'invalid_project');
    const showResults = header(headers, TOOL_RESULTS_HEADER) === 'true';
    let conversationId = req.conversationId;
    if (conversationId && (await this.ownership.conversationProject(conversationId)) !== projectId) {
      throw new OpenAiError(404, `No conversation found with id '${conversationId}'.`, 'conversation', 'conversation_not_found');
    }
    if (req.previousResponseId) {
      const previous = requestIdOf(req.previousResponseId);
      const project = previous ? await this.ownership.runProject(previous) : undefined;
      if (!previous || project !== projectId) throw new OpenAiError(404, `Previous response with id '${req.previousResponseId}' not found.`, 'previous_response_id', 'previous_response_not_found');
      conversationId = (await this.runs.get(previous)).conversationId;
    }
    const options = { ...(model === undefined ? {} : { model }), ...(req.background ? { detach: true } : {}), ...(showResults ? { debugShowToolResults: true } : {}) };
    const events = await this.chat.send(
      protocol,
      { projectId, conversationId, content: req.turn.content, options },
      flow,
      clientGone,
      // a continued conversation brings its stored history; otherwise the request's items are it
      { ...(conversationId ? {} : { history: req.turn.history }), instructions: req.turn.instructions, idempotency, keyId },
    );
    const frame = (requestId: string): ResponseFrame => ({
      requestId,
      createdAt: Math.floor(Date.now() / 1000),
      model: model ?? '',
      instructions: req.instructions,
      metadata: req.metadata,
      previousResponseId: req.previousResponseId ?? null,
      background: req.background,
    });
    // the run's requestId arrives with its first event: the projection is made then
    let projection: ResponseProjection | undefined;
    const lazy = {
      push: (e: SentEvent) => (projection ??= new ResponseProjection(frame(String(e.data.requestId)))).push(e),
      snapshot: () => projection?.snapshot() ?? {},
    };
    return { events, projection: lazy, background: req.background };
  }
}

/** Responses stream events as SSE: `event: <type>` and its JSON, as OpenAI sends them. */
function wire(events: Observable<ResponseEvent>): Observable<MessageEvent> {
  return toMessageEvents(events.pipe(map((e): WireMessage => ({ type: e.type, data: e }))));
}

