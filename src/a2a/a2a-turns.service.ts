import { Inject, Injectable } from '@nestjs/common';
import type { AgentCard, Message, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { PushNotificationNotSupportedError, RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';
import { ChatService } from '../chat/chat.service';
import { PROJECT_OWNERSHIP, type ProjectOwnershipPort } from '../common/auth/project-ownership.port';
import { OrionException } from '../common/errors/orion.exception';
import { UNBOUNDED_FLOW } from '../common/sse/client-flow';
import type { SentEvent } from '../runs/run-event-bus.service';
import { RunEventsService } from '../runs/run-events.service';
import { ApprovalsService } from '../runs/approvals/approvals.service';
import { RunsService } from '../runs/runs.service';
import { turnOutcome } from '../runs/turn-outcome';
import { agentCard } from './a2a-card';
import { initialStreamState, isFinal, stateOfRun, toStreamResponses, toTask } from './a2a-task.mapper';
import { UUID_PATTERN as UUID } from '../common/util/uuid';

const MAX_CONTENT = 32_000;
/** tasks/cancel answers once the run has ended, waiting at most this long for it. */
const CANCEL_WAIT_MS = 15_000;

/** The A2A user of a request: the key and the project it acts in (resolved before the SDK reads the body). */
export class OrionA2aUser implements User {
  constructor(
    readonly keyId: string,
    readonly projectId: string,
    /** keeps what the request's response holds (its turn slots) until the task it started ends */
    readonly outlive?: (ended: Promise<unknown>) => void,
  ) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.keyId;
  }
}

/**
 * The A2A request handler over Orion's runs, for the SDK's JSON-RPC transport: a task is an
 * Orion run (task id = requestId, contextId = conversationId), so tasks/get, tasks/cancel and
 * resubscribe are the run's status, cancel and reconnect and work from any instance; nothing of
 * a task is kept in memory. Written here rather than the SDK's DefaultRequestHandler, whose task
 * store and event bus would keep a second, per-instance copy of what the run already stores.
 */
@Injectable()
export class A2aTurnsService implements A2ARequestHandler {
  constructor(
    private readonly chat: ChatService,
    private readonly runs: RunsService,
    private readonly runEvents: RunEventsService,
    private readonly approvals: ApprovalsService,
    @Inject(PROJECT_OWNERSHIP) private readonly ownership: ProjectOwnershipPort,
  ) {}

  /** The card the JSON-RPC transport checks versions against (the served one names the request's host). */
  async getAgentCard(): Promise<AgentCard> {
    return agentCard('');
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError('Orion has no extended agent card');
  }

  /** message/send: the turn's task once it has ended or waits for a person (returnImmediately: once it started). */
  async sendMessage(params: SendMessageRequest, ctx: ServerCallContext): Promise<Message | Task> {
    const events = await this.start(params, ctx);
    const seen: SentEvent[] = [];
    for await (const e of events) {
      seen.push(e);
      const o = turnOutcome(seen);
      if (params.configuration?.returnImmediately || o.awaiting || o.stopReason !== undefined) break;
    }
    return this.snapshot(seen, TaskState.TASK_STATE_WORKING);
  }

  /** message/stream: the task, then its updates until it ends or waits for a person. */
  async *sendMessageStream(params: SendMessageRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.mapped(await this.start(params, ctx));
  }

  async getTask(params: { id: string }, ctx: ServerCallContext): Promise<Task> {
    await this.requireTask(params.id, ctx);
    const run = await this.runs.get(params.id);
    return this.snapshot(await this.runEvents.stored(params.id), stateOfRun(run.status));
  }

  /** tasks/cancel: Orion's cancel; answers with the task once its run has ended. */
  async cancelTask(params: { id: string }, ctx: ServerCallContext): Promise<Task> {
    await this.requireTask(params.id, ctx);
    try {
      await this.runs.cancel(params.id);
    } catch (err) {
      if (err instanceof OrionException && err.httpStatus() === 409) throw new TaskNotCancelableError(`Task ${params.id} has already ended`);
      throw err;
    }
    const events: SentEvent[] = [];
    for await (const e of this.runEvents.untilEnd(params.id, 0, AbortSignal.timeout(CANCEL_WAIT_MS))) events.push(e);
    const run = await this.runs.get(params.id);
    return this.snapshot(events, stateOfRun(run.status));
  }

  /**
   * Resubscribe: Orion's reconnect. The task, then every update from the run's first event (a
   * replay of what was streamed, so the answer artifact is whole), then live until it ends or waits again.
   */
  async *resubscribe(params: { id: string }, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.requireTask(params.id, ctx);
    const run = await this.runs.get(params.id);
    if (run.status !== 'running' && run.status !== 'awaiting_approval') throw new UnsupportedOperationError(`Task ${params.id} has ended (${run.status}): read it with tasks/get`);
    const stop = new AbortController();
    // the replay leaves out what a takeover superseded (issue 44), or the answer artifact would
    // hold the cut-off fragment before the continued answer; a takeover stored after this read
    // supersedes events that may already be sent
    const keep = await this.runEvents.notSuperseded(params.id);
    const live = async function* (events: AsyncIterable<SentEvent>) {
      for await (const e of events) if (keep(e)) yield e;
    };
    try {
      yield* this.mapped(live(this.runEvents.untilEnd(params.id, 0, stop.signal)), params.id);
    } finally {
      stop.abort();
    }
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError("Orion sends no A2A push notifications; its signed webhooks (webhookUrl on the chat routes) report a run's end");
  }
  async getTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError('Orion sends no A2A push notifications');
  }
  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError('Orion sends no A2A push notifications');
  }
  async deleteTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError('Orion sends no A2A push notifications');
  }
  async listTasks(): Promise<never> {
    throw new UnsupportedOperationError('tasks/list is not supported: list conversations with GET /api/chat/conversations');
  }

  /**
   * The run's events mapped to stream responses. A person's decision is not awaited on the
   * stream: input-required ends it (resubscribe after deciding).
   */
  private async *mapped(events: AsyncIterable<SentEvent>, requestId?: string): AsyncGenerator<StreamResponse, void, undefined> {
    const state = initialStreamState();
    for await (const e of events) {
      const out = toStreamResponses(state, e);
      yield* out;
      const last = out.at(-1)?.payload;
      if (last?.$case !== 'statusUpdate' || !last.value.status || !isFinal(last.value.status.state)) continue;
      // a replayed input-required whose approval a person has decided since is not the end: the run goes on
      const waitingFor = state.outcome.awaiting?.approvalId;
      if (last.value.status.state === TaskState.TASK_STATE_INPUT_REQUIRED && waitingFor && requestId && !(await this.approvals.isPending(requestId, waitingFor))) continue;
      return;
    }
  }

  private snapshot(events: SentEvent[], state: TaskState): Task {
    const o = turnOutcome(events);
    const last = events.at(-1)?.seq ?? 0;
    return toTask({ taskId: o.requestId ?? '', contextId: o.conversationId ?? '', seq: last }, o, o.stopReason !== undefined && state === TaskState.TASK_STATE_WORKING ? TaskState.TASK_STATE_COMPLETED : state);
  }

  /** A task of another project, or no run at all, is an unknown task. */
  private async requireTask(id: string, ctx: ServerCallContext): Promise<void> {
    const project = UUID.test(id) ? await this.ownership.runProject(id) : undefined;
    if (project === undefined || project !== userOf(ctx).projectId) throw new TaskNotFoundError(`Task ${id} not found`);
  }

  /** Starts the turn of a message: its text parts are the question, its contextId the conversation. */
  private async start(params: SendMessageRequest, ctx: ServerCallContext): Promise<AsyncIterable<SentEvent>> {
    const { projectId, keyId, outlive } = userOf(ctx);
    const m = params.message;
    if (!m) throw new RequestMalformedError('message is required');
    if (m.taskId) throw new UnsupportedOperationError(`message.taskId: a task is not continued by a message; decide its approval on POST /api/chat/runs/${m.taskId}/approvals/:approvalId, then resubscribe`);
    const content = m.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
    if (!content.trim()) throw new RequestMalformedError('message.parts: the message needs a text part (the question)');
    if (content.length > MAX_CONTENT) throw new RequestMalformedError(`message.parts: the text must be at most ${MAX_CONTENT} characters (got ${content.length})`);
    if (m.contextId && !UUID.test(m.contextId)) throw new RequestMalformedError('message.contextId must be a UUID (the conversation to continue)');
    const webhookUrl = pushUrl(params);
    try {
      // detached: an A2A task lives on without its caller; tasks/get and resubscribe find it
      const events = await this.chat.send('unified', { projectId, conversationId: m.contextId || undefined, content, options: { detach: true }, ...(webhookUrl ? { webhookUrl } : {}) }, { ...UNBOUNDED_FLOW, outlive }, new AbortController().signal, { keyId });
      return eachValue(events);
    } catch (err) {
      // an unknown conversation and another project's read the same: existence is not revealed
      if (err instanceof OrionException && err.httpStatus() === 404) throw new TaskNotFoundError(`message.contextId: no conversation ${m.contextId} in this project`);
      if (err instanceof OrionException && err.httpStatus() < 500) throw new RequestMalformedError(`${err.code}: ${err.message}`);
      throw err;
    }
  }
}

/**
 * A message's push notification config as the turn's webhookUrl: Orion's own signed webhook
 * (Standard Webhooks, signed with the project's secret) goes there when the task ends or waits for
 * a person. A token or authentication scheme of A2A's is refused rather than dropped: the
 * signature is how a receiver knows the call is Orion's.
 */
function pushUrl(params: SendMessageRequest): string | undefined {
  const push = params.configuration?.taskPushNotificationConfig;
  if (!push) return undefined;
  if (push.token) throw new RequestMalformedError('configuration.taskPushNotificationConfig.token is not supported: Orion signs its webhooks (Standard Webhooks) instead');
  if (push.authentication) throw new RequestMalformedError('configuration.taskPushNotificationConfig.authentication is not supported: Orion signs its webhooks (Standard Webhooks) instead');
  if (!push.url) throw new RequestMalformedError('configuration.taskPushNotificationConfig.url is required');
  return push.url;
}

function userOf(ctx: ServerCallContext): OrionA2aUser {
  const user = ctx.user;
  if (!(user instanceof OrionA2aUser)) throw new Error('A2A request without its Orion user');
  return user;
}

/** An observable of run events as an async iterable (the SDK's handler methods are generators). */
async function* eachValue(events: import('rxjs').Observable<SentEvent>): AsyncGenerator<SentEvent> {
  const queue: SentEvent[] = [];
  let done = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const sub = events.subscribe({
    next: (e) => (queue.push(e), wake?.()),
    error: (err: unknown) => ((failure = err), (done = true), wake?.()),
    complete: () => ((done = true), wake?.()),
  });
  try {
    while (true) {
      if (queue.length) {
        yield queue.shift()!;
        continue;
      }
      if (failure) throw failure;
      if (done) return;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  } finally {
    sub.unsubscribe();
  }
}
