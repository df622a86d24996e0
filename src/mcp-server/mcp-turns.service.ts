import { Inject, Injectable, Logger } from '@nestjs/common';
import { concatMap, lastValueFrom, takeWhile } from 'rxjs';
import { ChatService, type ChatProtocol } from '../chat/chat.service';
import { ConversationsService } from '../chat/conversations.service';
import { PROJECT_OWNERSHIP, type ProjectOwnershipPort } from '../common/auth/project-ownership.port';
import { OrionException } from '../common/errors/orion.exception';
import { UNBOUNDED_FLOW } from '../common/sse/client-flow';
import { AppConfigService } from '../config/app-config.service';
import { ApprovalsService } from '../runs/approvals/approvals.service';
import type { SentEvent } from '../runs/run-event-bus.service';
import { RunEventsService } from '../runs/run-events.service';
import { RunsService } from '../runs/runs.service';
import { foldTurnEvent, progressLine, turnOutcome, type TurnOutcome } from '../runs/turn-outcome';
import { TraceService } from '../trace/trace.service';
import { refusal, toAskResult, waitingResult } from './mcp-answer.mapper';

/** What a tool handler gets from the MCP SDK that this service uses (its RequestHandlerExtra). */
export interface ToolCallContext {
  /** aborted when the client sends notifications/cancelled for the call */
  signal: AbortSignal;
  /** the client's progress token, when it asked for progress */
  progressToken?: string | number;
  notify(progress: { progressToken: string | number; progress: number; message: string }): Promise<void>;
}

export interface AskInput {
  question: string;
  conversationId?: string;
  route?: ChatProtocol;
}

/** The project a session acts in, the API key that opened it (its budget), and a signal that fires when the session closes. */
export interface McpScope {
  projectId: string;
  keyId: string;
  closed: AbortSignal;
}

const TRACE_LIMIT = 500;
/** An approval decided while `ask` read its request: how long it then waits for the answer. */
const SETTLED_WAIT_S = 30;

/**
 * The MCP tools' work, through the same services as every route: `ask` starts a turn with
 * ChatService and follows its events (tool progress → progress notifications, a cancelled call →
 * Orion's cancel), the other tools read conversations and traces in the session's project only.
 */
@Injectable()
export class McpTurnsService {
  private readonly logger = new Logger('McpServer');

  constructor(
    private readonly chat: ChatService,
    private readonly conversations: ConversationsService,
    private readonly runs: RunsService,
    private readonly runEvents: RunEventsService,
    private readonly approvals: ApprovalsService,
    private readonly trace: TraceService,
    private readonly config: AppConfigService,
    @Inject(PROJECT_OWNERSHIP) private readonly ownership: ProjectOwnershipPort,
  ) {}

  async ask(scope: McpScope, input: AskInput, call: ToolCallContext) {
    const route = input.route ?? 'unified';
    if (route === 'two-stage' && !this.config.get('TWO_STAGE_ENABLED')) return refusal('route: "two-stage" is not enabled on this server (TWO_STAGE_ENABLED); use "unified"');
    if (call.signal.aborted) return refusal('The call was cancelled before its turn started');
    let events;
    try {
      // the session closing is the client leaving: a turn it no longer waits for is cancelled
      events = await this.chat.send(route, { projectId: scope.projectId, conversationId: input.conversationId, content: input.question }, UNBOUNDED_FLOW, scope.closed, { keyId: scope.keyId });
    } catch (err) {
      if (err instanceof OrionException) return refusal(`${err.code}: ${err.message}`);
      throw err;
    }
    const outcome: TurnOutcome = { answer: '', sources: [], tools: [] };
    let step = 0;
    let cancelled = false;
    const cancel = () => {
      if (cancelled || !outcome.requestId) return;
      cancelled = true;
      this.runs.cancel(outcome.requestId).catch((e: unknown) => this.logger.debug(`cancel of ${outcome.requestId} after notifications/cancelled: ${(e as Error).message}`));
    };
    call.signal.addEventListener('abort', cancel, { once: true });
    try {
      await lastValueFrom(
        events.pipe(
          concatMap(async (e) => {
            foldTurnEvent(outcome, e);
            if (call.signal.aborted) cancel(); // cancelled before the run had an id
            // the first step names the run, so a client can follow it on the run routes meanwhile
            const message = e.type === 'start' ? `Started turn ${String(e.data.requestId)} in conversation ${String(e.data.conversationId)}` : progressLine(e);
            if (message === null || call.progressToken === undefined || call.signal.aborted) return;
            await call.notify({ progressToken: call.progressToken, progress: ++step, message }).catch(() => undefined);
          }),
          // a call that waits for a person is answered at once (as /v1 does): an MCP client's
          // request timeout is far shorter than an approval's, and would cancel the run
          takeWhile(() => !outcome.awaiting),
        ),
        { defaultValue: undefined },
      );
    } finally {
      call.signal.removeEventListener('abort', cancel);
    }
    // an approval decided while this read its stored request: the answer follows
    if (outcome.awaiting) return (await this.approvals.isPending(outcome.requestId ?? '', outcome.awaiting.approvalId)) ? waitingResult(outcome) : this.answer(scope, outcome.requestId ?? '', SETTLED_WAIT_S);
    return toAskResult(outcome);
  }

  /**
   * `get_answer`: a turn's result as `ask` gives it, from its stored events: the answer once it
   * has ended, else where it stands (waiting for a person, or still running); `waitSeconds`
   * waits that long for the end first.
   */
  async answer(scope: McpScope, requestId: string, waitSeconds: number) {
    if ((await this.ownership.runProject(requestId)) !== scope.projectId) return refusal(`requestId: no run ${requestId} in project ${scope.projectId}`);
    const seen: SentEvent[] = [];
    if (waitSeconds > 0) {
      const stop = AbortSignal.any([AbortSignal.timeout(waitSeconds * 1000), scope.closed]);
      for await (const e of this.runEvents.untilEnd(requestId, 0, stop)) seen.push(e);
    } else {
      seen.push(...(await this.runEvents.stored(requestId)));
    }
    const outcome = turnOutcome(seen);
    if (outcome.stopReason !== undefined) return toAskResult(outcome);
    if (outcome.awaiting) return waitingResult(outcome);
    return waitingResult(outcome, 'running');
  }

  async listConversations(scope: McpScope, limit: number) {
    const all = await this.conversations.list(scope.projectId);
    const conversations = all.slice(0, limit).map((c) => ({ id: c.id, title: c.title, createdAt: c.createdAt, updatedAt: c.updatedAt }));
    const text = conversations.length ? conversations.map((c) => `${c.id}  ${c.title}  (updated ${c.updatedAt})`).join('\n') : 'No conversations in this project yet.';
    return { content: [{ type: 'text' as const, text }], structuredContent: { projectId: scope.projectId, conversations } };
  }

  async runTrace(scope: McpScope, requestId: string) {
    // another project's run reads as an unknown one, as on every route
    if ((await this.ownership.runProject(requestId)) !== scope.projectId) return refusal(`requestId: no run ${requestId} in project ${scope.projectId}`);
    const run = await this.runs.get(requestId);
    const events = (await this.trace.query({ requestId, projectId: scope.projectId, limit: TRACE_LIMIT })).map((e) => ({ type: e.type, details: e.details, createdAt: e.createdAt }));
    const text = [`Run ${requestId}: ${run.status}${run.stopReason ? ` (${run.stopReason})` : ''}, ${events.length} trace events`, ...events.map((e) => `${e.createdAt} ${e.type} ${JSON.stringify(e.details)}`)].join('\n');
    return {
      content: [{ type: 'text' as const, text }],
      structuredContent: { requestId, conversationId: run.conversationId, status: run.status, stopReason: run.stopReason ?? null, events },
    };
  }
}
