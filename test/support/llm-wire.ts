import type { WireFrame } from './llm-recordings';

/**
 * One step of a scripted model response, in provider-neutral terms. A list of steps renders
 * as OpenAI SSE chunks, an OpenAI non-streaming completion, Ollama NDJSON lines or an Ollama
 * non-streaming answer, so a protocol test scripts a model once and any adapter can read it.
 *
 * - `{ text }`: answer text (one delta)
 * - `{ reasoning }`: thinking text (`reasoning_content` / Ollama `thinking`)
 * - `{ toolCall: { name, args, id? } }`: one tool call; `args` an object (or a raw string, to
 *   script invalid JSON); the OpenAI rendering streams it as a header delta + argument fragments
 * - `{ finish, usage? }`: the finish reason (default: `tool_calls` if the steps called a tool,
 *   else `stop`) and token usage (default: a small estimate); added automatically when absent
 * - `{ error }`: an inline error object (OpenRouter style); nothing is rendered after it
 * - `{ chunk }`: a raw OpenAI chunk, sent as is (SSE only)
 */
export type ScriptStep =
  | { text: string }
  | { reasoning: string }
  | { toolCall: { name: string; args?: Record<string, unknown> | string; id?: string } }
  | { finish: string; usage?: ScriptUsage | null }
  | { error: { message: string; code?: string | number; type?: string } }
  | { chunk: Record<string, unknown> };

/** `null`: the provider reports no usage at all (no usage chunk, no usage field) */
export interface ScriptUsage {
  promptTokens: number;
  completionTokens: number;
  /** rendered as OpenAI's prompt_tokens_details.cached_tokens */
  cachedTokens?: number;
  /** rendered as OpenAI's completion_tokens_details.reasoning_tokens */
  reasoningTokens?: number;
}

export interface RenderOptions {
  model?: string;
  /** OpenAI rendering: split tool-call arguments into fragments of this many characters (default: one fragment) */
  argumentFragmentSize?: number;
  /** OpenAI SSE: end with `data: [DONE]` (default true) */
  done?: boolean;
}

const DEFAULT_MODEL = 'scripted-model';

interface Normalized {
  steps: ScriptStep[];
  finish?: { reason: string; usage: ScriptUsage | null };
}

/** Adds the implicit finish and a default usage estimate (4 chars ≈ 1 token). */
function normalize(steps: ScriptStep[]): Normalized {
  const errorAt = steps.findIndex((s) => 'error' in s);
  const body = errorAt === -1 ? steps : steps.slice(0, errorAt + 1);
  if (errorAt !== -1) return { steps: body };
  const explicit = body.find((s): s is Extract<ScriptStep, { finish: string }> => 'finish' in s);
  const calledTool = body.some((s) => 'toolCall' in s);
  const chars = body.reduce((n, s) => n + ('text' in s ? s.text.length : 'toolCall' in s ? argsText(s.toolCall.args).length + s.toolCall.name.length : 0), 0);
  return {
    steps: body.filter((s) => !('finish' in s)),
    finish: {
      reason: explicit?.finish ?? (calledTool ? 'tool_calls' : 'stop'),
      usage: explicit?.usage !== undefined ? explicit.usage : { promptTokens: 12, completionTokens: Math.max(1, Math.ceil(chars / 4)) },
    },
  };
}

function openAiUsage(u: ScriptUsage): Record<string, unknown> {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    ...(u.cachedTokens !== undefined ? { prompt_tokens_details: { cached_tokens: u.cachedTokens } } : {}),
    ...(u.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: u.reasoningTokens } } : {}),
  };
}

function argsText(args: Record<string, unknown> | string | undefined): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {});
}

function callId(step: Extract<ScriptStep, { toolCall: unknown }>, n: number): string {
  return step.toolCall.id ?? `call_scripted_${n}`;
}

/** The steps as OpenAI `chat.completion.chunk` objects (without the `[DONE]` sentinel). */
export function openAiChunksFromSteps(steps: ScriptStep[], options: RenderOptions = {}): Record<string, unknown>[] {
  const { steps: body, finish } = normalize(steps);
  const model = options.model ?? DEFAULT_MODEL;
  const base = { id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 1_700_000_000, model };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const out: Record<string, unknown>[] = [chunk({ role: 'assistant', content: '' })];
  let toolIndex = 0;
  for (const step of body) {
    if ('text' in step) out.push(chunk({ content: step.text }));
    else if ('reasoning' in step) out.push(chunk({ reasoning_content: step.reasoning }));
    else if ('chunk' in step) out.push(step.chunk);
    else if ('error' in step) out.push({ ...base, error: step.error, choices: [] });
    else if ('toolCall' in step) {
      const index = toolIndex++;
      out.push(chunk({ tool_calls: [{ index, id: callId(step, index), type: 'function', function: { name: step.toolCall.name, arguments: '' } }] }));
      const args = argsText(step.toolCall.args);
      const size = options.argumentFragmentSize && options.argumentFragmentSize > 0 ? options.argumentFragmentSize : Math.max(1, args.length);
      for (let i = 0; i < args.length; i += size) out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(i, i + size) } }] }));
    }
  }
  if (finish) {
    out.push(chunk({}, finish.reason));
    if (finish.usage) out.push({ ...base, choices: [], usage: openAiUsage(finish.usage) });
  }
  return out;
}

/** The steps as OpenAI SSE frames, ending with `[DONE]` unless an error step ended them or `done:false`. */
export function openAiSseFrames(steps: ScriptStep[], options: RenderOptions = {}): WireFrame[] {
  const frames: WireFrame[] = openAiChunksFromSteps(steps, options).map((c) => ({ data: JSON.stringify(c) }));
  const errored = steps.some((s) => 'error' in s);
  if (options.done !== false && !errored) frames.push({ data: '[DONE]' });
  return frames;
}

/** The steps as one non-streaming OpenAI `chat.completion` body. */
export function openAiCompletionFromSteps(steps: ScriptStep[], options: RenderOptions = {}): Record<string, unknown> {
  const { steps: body, finish } = normalize(steps);
  const errorStep = body.find((s): s is Extract<ScriptStep, { error: unknown }> => 'error' in s);
  if (errorStep) return { error: errorStep.error };
  const text = body.map((s) => ('text' in s ? s.text : '')).join('');
  const reasoning = body.map((s) => ('reasoning' in s ? s.reasoning : '')).join('');
  const calls = body.filter((s): s is Extract<ScriptStep, { toolCall: unknown }> => 'toolCall' in s);
  const usage = finish?.usage;
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: options.model ?? DEFAULT_MODEL,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text || (calls.length ? null : ''),
          ...(reasoning ? { reasoning_content: reasoning } : {}),
          ...(calls.length
            ? { tool_calls: calls.map((c, i) => ({ id: callId(c, i), type: 'function', function: { name: c.toolCall.name, arguments: argsText(c.toolCall.args) } })) }
            : {}),
        },
        finish_reason: finish?.reason ?? 'stop',
      },
    ],
    ...(usage !== null ? { usage: openAiUsage(usage ?? { promptTokens: 0, completionTokens: 0 }) } : {}),
  };
}

function ollamaArgs(args: Record<string, unknown> | string | undefined): unknown {
  if (typeof args !== 'string') return args ?? {};
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args; // a raw string: lets a test script arguments Ollama would never send
  }
}

/** The steps as Ollama `/api/chat` NDJSON objects (the last one `done:true`). */
export function ollamaLinesFromSteps(steps: ScriptStep[], options: RenderOptions = {}): Record<string, unknown>[] {
  const { steps: body, finish } = normalize(steps);
  const model = options.model ?? DEFAULT_MODEL;
  const line = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    model,
    created_at: '2025-01-01T00:00:00Z',
    message: { role: 'assistant', content: '', ...message },
    done: false,
    ...extra,
  });
  const out: Record<string, unknown>[] = [];
  for (const step of body) {
    if ('text' in step) out.push(line({ content: step.text }));
    else if ('reasoning' in step) out.push(line({ thinking: step.reasoning }));
    else if ('toolCall' in step) out.push(line({ tool_calls: [{ function: { name: step.toolCall.name, arguments: ollamaArgs(step.toolCall.args) } }] }));
    else if ('error' in step) out.push({ error: step.error.message });
  }
  if (finish) {
    // Ollama says "stop" even after tool calls; keep that quirk unless a reason was scripted.
    const reason = finish.reason === 'tool_calls' ? 'stop' : finish.reason;
    out.push(line({}, { done: true, done_reason: reason, ...(finish.usage ? { prompt_eval_count: finish.usage.promptTokens, eval_count: finish.usage.completionTokens } : {}) }));
  }
  return out;
}

/** The steps as one non-streaming Ollama `/api/chat` answer. */
export function ollamaCompletionFromSteps(steps: ScriptStep[], options: RenderOptions = {}): Record<string, unknown> {
  const lines = ollamaLinesFromSteps(steps, options);
  const error = lines.find((l) => 'error' in l);
  if (error) return error;
  const messages = lines.map((l) => l.message as Record<string, unknown>);
  const last = lines[lines.length - 1];
  const toolCalls = messages.flatMap((m) => (Array.isArray(m.tool_calls) ? m.tool_calls : []));
  const thinking = messages.map((m) => (typeof m.thinking === 'string' ? m.thinking : '')).join('');
  return {
    ...last,
    message: {
      role: 'assistant',
      content: messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join(''),
      ...(thinking ? { thinking } : {}),
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    },
  };
}
