import { type Artifact, type Message, type Part, Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { decideRoute, foldTurnEvent, progressLine, type TurnEventLike, type TurnOutcome } from '../runs/turn-outcome';

/** The artifacts of a task: the answer text (streamed in pieces) and the sources it rests on. */
export const ANSWER_ARTIFACT = 'answer';
export const SOURCES_ARTIFACT = 'sources';

/** A run's status (GET /api/chat/runs/:id) as an A2A task state. */
export function stateOfRun(status: string): TaskState {
  switch (status) {
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
    case 'failed':
      return TaskState.TASK_STATE_FAILED;
    case 'awaiting_approval':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    default:
      // running, and paused (a two-stage run resumed on its own route): work not yet done
      return TaskState.TASK_STATE_WORKING;
  }
}

/** A done event's stop reason as the task's final state: a loop limit still answered. */
export function stateOfStop(stopReason: string): TaskState {
  if (stopReason === 'cancelled') return TaskState.TASK_STATE_CANCELED;
  if (stopReason === 'error') return TaskState.TASK_STATE_FAILED;
  return TaskState.TASK_STATE_COMPLETED;
}

export const isFinal = (s: TaskState) =>
  s === TaskState.TASK_STATE_COMPLETED || s === TaskState.TASK_STATE_CANCELED || s === TaskState.TASK_STATE_FAILED || s === TaskState.TASK_STATE_INPUT_REQUIRED;

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

function agentMessage(ids: Ids, parts: Part[]): Message {
  return { messageId: `${ids.taskId}:${ids.seq}`, contextId: ids.contextId, taskId: ids.taskId, role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

interface Ids {
  taskId: string;
  contextId: string;
  /** the run event's seq, which makes each status message id unique and stable on a replay */
  seq: number;
}

/** The status message of a task waiting for a person: what waits, and where to decide it. */
function approvalMessage(ids: Ids, a: NonNullable<TurnOutcome['awaiting']>): Message {
  const decide = decideRoute(ids.taskId, a.approvalId);
  return agentMessage(ids, [
    text(`Waiting for approval of ${a.tool} (approvalId ${a.approvalId}). Decide it with ${decide}; then resubscribe to this task for the rest.`),
    data({ approvalId: a.approvalId, tool: a.tool, arguments: a.arguments, expiresAt: a.expiresAt ?? null, decide }),
  ]);
}

function artifacts(o: TurnOutcome): Artifact[] {
  const out: Artifact[] = [];
  if (o.answer) out.push({ artifactId: ANSWER_ARTIFACT, name: ANSWER_ARTIFACT, description: "Orion's answer", parts: [text(o.answer)], metadata: undefined, extensions: [] });
  if (o.sources.length) out.push({ artifactId: SOURCES_ARTIFACT, name: SOURCES_ARTIFACT, description: 'the sources the answer rests on', parts: [data(o.sources)], metadata: undefined, extensions: [] });
  return out;
}

/** The task as it stands after `o` (a run's events so far), in the state the run is in. */
export function toTask(ids: Ids, o: TurnOutcome, state: TaskState): Task {
  const message = o.awaiting ? approvalMessage(ids, o.awaiting) : o.error ? agentMessage(ids, [text(`${o.error.code}: ${o.error.message}`)]) : undefined;
  return {
    id: ids.taskId,
    contextId: ids.contextId,
    status: { state: o.awaiting ? TaskState.TASK_STATE_INPUT_REQUIRED : state, message, timestamp: new Date().toISOString() },
    artifacts: artifacts(o),
    history: [],
    metadata: { stopReason: o.stopReason ?? null, tools: o.tools },
  };
}

/** What a stream has mapped so far: the outcome it folds, and whether the task was sent. */
export interface StreamState {
  outcome: TurnOutcome;
  taskSent: boolean;
  answerStarted: boolean;
}

export const initialStreamState = (): StreamState => ({ outcome: { answer: '', sources: [], tools: [] }, taskSent: false, answerStarted: false });

/**
 * One run event as A2A stream responses: the task first (on the run's first event), answer text
 * as appended pieces of the answer artifact, tool steps as working status messages, an approval as
 * input-required (the stream ends there: a person decides on Orion's route), the end as the final
 * status. Pure; `state` is updated in place.
 */
export function toStreamResponses(state: StreamState, e: TurnEventLike & { seq: number }): StreamResponse[] {
  foldTurnEvent(state.outcome, e);
  const ids = { taskId: state.outcome.requestId ?? '', contextId: state.outcome.conversationId ?? '', seq: e.seq };
  const out: StreamResponse[] = [];
  const status = (s: TaskState, message: Message | undefined): StreamResponse => ({
    payload: { $case: 'statusUpdate', value: { taskId: ids.taskId, contextId: ids.contextId, status: { state: s, message, timestamp: new Date().toISOString() }, metadata: undefined } },
  });
  if (!state.taskSent) {
    state.taskSent = true;
    const first = e.type === 'queued' ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING;
    out.push({ payload: { $case: 'task', value: toTask(ids, { ...state.outcome, answer: '', sources: [] }, first) } });
  }
  if (e.type === 'chunk' && typeof e.data.content === 'string' && e.data.content) {
    const artifact: Artifact = { artifactId: ANSWER_ARTIFACT, name: ANSWER_ARTIFACT, description: "Orion's answer", parts: [text(e.data.content)], metadata: undefined, extensions: [] };
    out.push({ payload: { $case: 'artifactUpdate', value: { taskId: ids.taskId, contextId: ids.contextId, artifact, append: state.answerStarted, lastChunk: false, metadata: undefined } } });
    state.answerStarted = true;
  } else if (e.type === 'sources') {
    const [artifact] = artifacts({ ...state.outcome, answer: '' });
    if (artifact) out.push({ payload: { $case: 'artifactUpdate', value: { taskId: ids.taskId, contextId: ids.contextId, artifact, append: false, lastChunk: true, metadata: undefined } } });
  } else if (e.type === 'approval_required' && state.outcome.awaiting) {
    out.push(status(TaskState.TASK_STATE_INPUT_REQUIRED, approvalMessage(ids, state.outcome.awaiting)));
  } else if (e.type === 'done') {
    const final = stateOfStop(state.outcome.stopReason ?? 'error');
    const said = state.outcome.error ? `${state.outcome.error.code}: ${state.outcome.error.message}` : state.outcome.answer;
    out.push(status(final, said ? agentMessage(ids, [text(said)]) : undefined));
  } else {
    const line = progressLine(e);
    if (line !== null && e.type !== 'approval_required') out.push(status(TaskState.TASK_STATE_WORKING, agentMessage(ids, [text(line)])));
  }
  return out;
}
