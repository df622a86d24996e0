import { errorType, type OpenAiErrorBody } from './openai-error';

/** A stored run event as it is sent (its SSE name and enveloped data). */
export interface RunEventLike {
  type: string;
  data: Record<string, unknown>;
}

/** What one completion's chunks share. */
export interface CompletionFrame {
  /** Unix seconds, the same on every chunk */
  created: number;
  /** the model the turn talks to (the `start` event's) */
  model: string;
  /** `stream_options.include_usage`: the final chunk carries `usage` */
  includeUsage: boolean;
  /** `X-Orion-Progress`: tool steps as readable text in `delta.orion_progress` */
  progress: boolean;
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
  /** Orion's own (issue 46): the turn's cost from LLM_PRICES, and whether the counts are a tokenizer's estimate */
  orion_cost?: number;
  orion_estimated?: boolean;
}

/** Orion's own facts about the turn, on the final chunk and the completion. */
export interface OrionCompletionExtension {
  request_id: string;
  conversation_id: string;
  stop_reason: string;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    delta: { role?: 'assistant'; content?: string; orion_progress?: string };
    finish_reason: 'stop' | 'length' | null;
    logprobs: null;
  }>;
  usage?: CompletionUsage;
  orion?: OrionCompletionExtension;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: { role: 'assistant'; content: string; refusal: null; orion_progress?: string[] };
    finish_reason: 'stop' | 'length';
    logprobs: null;
  }>;
  usage: CompletionUsage;
  orion: OrionCompletionExtension;
}

/** The stream's last message. */
export const DONE = '[DONE]';

/** What one run event becomes on the OpenAI stream: chunks, an error object, `[DONE]`. */
export type CompletionSseData = ChatCompletionChunk | OpenAiErrorBody | typeof DONE;

/** The completion id carries the run's requestId, for run control and GET /api/trace. */
export const completionId = (requestId: unknown): string => `chatcmpl-${String(requestId)}`;

/**
 * OpenAI's finish_reason for Orion's stop reason: `length` for an answer the model's token
 * limit cut off, `stop` for every other answer (a forced final answer, a cancelled or paused
 * run included: `orion.stop_reason` says which).
 */
export function finishReason(stopReason: unknown): 'stop' | 'length' {
  return stopReason === 'max_tokens' ? 'length' : 'stop';
}

/**
 * One stored run event as the chunks of OpenAI's chat completion stream: `start` → the role
 * chunk, `chunk` → a content delta, `done` (or `paused`) → the chunk with `finish_reason`
 * (and `usage` when asked) and `[DONE]`, `error` → OpenAI's error object (the turn failed; its
 * `done` then ends the stream with `[DONE]` alone). Tool steps never become tool calls: with
 * `progress` they are readable lines in `delta.orion_progress`; otherwise they send nothing.
 */
export function toCompletionChunks(event: RunEventLike, frame: CompletionFrame): CompletionSseData[] {
  const d = event.data;
  const chunk = (delta: ChatCompletionChunk['choices'][0]['delta'], finish: 'stop' | 'length' | null = null): ChatCompletionChunk => ({
    id: completionId(d.requestId),
    object: 'chat.completion.chunk',
    created: frame.created,
    model: typeof d.model === 'string' && event.type === 'start' ? d.model : frame.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  switch (event.type) {
    case 'start':
      return [chunk({ role: 'assistant', content: '' })];
    case 'chunk':
      return typeof d.content === 'string' && d.content ? [chunk({ content: d.content })] : [];
    case 'error':
      return [errorObject(d)];
    case 'paused':
    case 'done': {
      const stopReason = event.type === 'paused' ? 'paused' : String(d.stopReason);
      if (stopReason === 'error') return [DONE];
      const last: ChatCompletionChunk = {
        ...chunk({}, finishReason(stopReason)),
        ...(frame.includeUsage ? { usage: usageOf(d.usage) } : {}),
        orion: extension(d, stopReason),
      };
      return [last, DONE];
    }
    default: {
      const line = frame.progress ? progressLine(event) : null;
      return line ? [chunk({ orion_progress: line })] : [];
    }
  }
}

/**
 * A whole turn's events as one `chat.completion` (`stream: false`), or the error that ended it.
 * The content is `done.fullContent`: what was streamed and stored.
 */
export function toCompletion(events: RunEventLike[], frame: CompletionFrame): { completion: ChatCompletion } | { error: OpenAiErrorBody; status: number } {
  const start = events.find((e) => e.type === 'start');
  const end = events.find((e) => e.type === 'done' || e.type === 'paused');
  const failure = events.find((e) => e.type === 'error');
  if (failure || !end || end.data.stopReason === 'error') {
    const body = failure ? errorObject(failure.data) : errorObject({ code: 'internal_error', message: 'The turn ended without an answer' });
    // the model provider failed: a bad gateway; anything else is Orion's own failure
    return { error: body, status: String(body.error.code).startsWith('llm_') ? 502 : 500 };
  }
  const stopReason = end.type === 'paused' ? 'paused' : String(end.data.stopReason);
  const content = end.type === 'done' ? String(end.data.fullContent ?? '') : events.flatMap((e) => (e.type === 'chunk' && typeof e.data.content === 'string' ? [e.data.content] : [])).join('');
  const progress = frame.progress ? events.flatMap((e) => progressLine(e) ?? []) : undefined;
  return {
    completion: {
      id: completionId(end.data.requestId),
      object: 'chat.completion',
      created: frame.created,
      model: typeof start?.data.model === 'string' ? start.data.model : frame.model,
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, ...(progress ? { orion_progress: progress } : {}) }, finish_reason: finishReason(stopReason), logprobs: null }],
      usage: usageOf(end.data.usage),
      orion: extension(end.data, stopReason),
    },
  };
}

/**
 * A tool step as one readable line (the `orion_progress` extension), or null for events that
 * are not progress: a call starting, ending, failing or refused; a tool's own stage messages;
 * a guard's notice; a call waiting for approval (naming the route that decides it) and its decision.
 */
export function progressLine(event: RunEventLike): string | null {
  const d = event.data;
  if (event.type === 'tool_progress') {
    const tool = String(d.tool);
    if (d.action === 'calling') return `Running ${tool} ${clip(JSON.stringify(d.params ?? {}), 200)}`;
    if (d.action === 'completed') return typeof d.durationMs === 'number' ? `${tool} completed in ${Math.round(d.durationMs)} ms` : `${tool} completed`;
    if (d.action === 'failed') return `${tool} failed${d.outcome ? ` (${String(d.outcome)})` : ''}`;
    if (d.action === 'refused') return `${tool} refused${d.outcome ? ` (${String(d.outcome)})` : ''}`;
    return null;
  }
  if (event.type === 'tool_phase' && d.stage !== 'error' && typeof d.message === 'string' && d.message) return `${String(d.toolId)}: ${d.message}`;
  if (event.type === 'notice' && typeof d.message === 'string') return d.message;
  // a /v1 client has no other way to learn that the turn waits for a person, nor where to answer
  if (event.type === 'approval_required') {
    const route = `POST /api/chat/runs/${String(d.requestId)}/approvals/${String(d.approvalId)}`;
    return `${String(d.tool)} waits for approval (approvalId ${String(d.approvalId)}): ${route} {"decision":"approve"} or {"decision":"deny"}`;
  }
  if (event.type === 'approval_decided') {
    const decided = d.decision === 'approve' ? 'approved' : 'denied';
    return `Approval ${String(d.approvalId)} ${decided}${d.by === 'timeout' ? ' (timeout)' : ''}`;
  }
  return null;
}

function errorObject(d: Record<string, unknown>): OpenAiErrorBody {
  const code = typeof d.code === 'string' ? d.code : 'internal_error';
  const status = code.startsWith('llm_') ? 502 : 500;
  return { error: { message: typeof d.message === 'string' ? d.message : 'The turn failed', type: errorType(status), param: null, code } };
}

function usageOf(u: unknown): CompletionUsage {
  const x = (u ?? {}) as { promptTokens?: unknown; completionTokens?: unknown; totalTokens?: unknown; cachedTokens?: unknown; reasoningTokens?: unknown; cost?: unknown; estimated?: unknown };
  const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  const n = (v: unknown) => (isNum(v) ? v : 0);
  return {
    prompt_tokens: n(x.promptTokens),
    completion_tokens: n(x.completionTokens),
    total_tokens: n(x.totalTokens),
    // OpenAI's own detail fields, where the provider reported them
    ...(isNum(x.cachedTokens) ? { prompt_tokens_details: { cached_tokens: x.cachedTokens } } : {}),
    ...(isNum(x.reasoningTokens) ? { completion_tokens_details: { reasoning_tokens: x.reasoningTokens } } : {}),
    ...(isNum(x.cost) ? { orion_cost: x.cost } : {}),
    ...(x.estimated === true ? { orion_estimated: true } : {}),
  };
}

function extension(d: Record<string, unknown>, stopReason: string): OrionCompletionExtension {
  return { request_id: String(d.requestId), conversation_id: String(d.conversationId), stop_reason: stopReason };
}

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
