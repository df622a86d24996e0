import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import type { LlmMessage } from '../llm/llm-adapter.port';
import { ChatCompletionRequestDto } from './dto/chat-completion-request.dto';
import { invalidRequest } from './openai-error';
import { fieldErrors } from '../common/errors/field-errors';

/** The longest user message a turn takes (the chat routes' `content` limit). */
export const MAX_CONTENT_CHARS = 32_000;
/** system/developer text is added to the system prompt; bounded like a conversation's customInstructions. */
export const MAX_INSTRUCTIONS_CHARS = 4_000;

/**
 * Parameters OpenAI defines that Orion cannot honour, refused with the reason: the client's
 * own tools (Orion runs its tools server-side and never hands a call to the client; a `null`
 * is refused with the same reason, not as an unknown parameter), more than one choice, log
 * probabilities.
 */
const REFUSED: Array<{ param: string; refuses: (v: unknown) => boolean; why: string }> = [
  { param: 'tools', refuses: (v) => v !== undefined, why: 'Orion runs its own tools server-side; a request may not declare tools' },
  { param: 'tool_choice', refuses: (v) => v !== undefined, why: 'Orion runs its own tools server-side; tool_choice is not supported' },
  { param: 'functions', refuses: (v) => v !== undefined, why: 'Orion runs its own tools server-side; functions are not supported' },
  { param: 'function_call', refuses: (v) => v !== undefined, why: 'Orion runs its own tools server-side; function_call is not supported' },
  { param: 'n', refuses: (v) => v !== undefined && v !== null && v !== 1, why: 'Only n = 1 is supported' },
  { param: 'logprobs', refuses: (v) => v === true, why: 'logprobs are not supported' },
  { param: 'top_logprobs', refuses: (v) => v !== undefined && v !== null, why: 'top_logprobs are not supported' },
  { param: 'logit_bias', refuses: (v) => v !== undefined && v !== null, why: 'logit_bias is not supported' },
  { param: 'audio', refuses: (v) => v !== undefined && v !== null, why: 'audio output is not supported' },
  { param: 'prediction', refuses: (v) => v !== undefined && v !== null, why: 'predicted outputs are not supported' },
];

/**
 * A request body as a checked request, or a 400 in OpenAI's shape naming the parameter at
 * fault: a refused parameter, an unknown one, then the first failed constraint.
 */
export function readCompletionRequest(body: unknown): ChatCompletionRequestDto {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object', null, 'invalid_body');
  const raw = body as Record<string, unknown>;
  // said plainly, before the validators' constraint messages ("model must be a string; …")
  for (const param of ['model', 'messages']) if (raw[param] === undefined || raw[param] === null) throw invalidRequest(`${param} is required`, param, 'missing_required_parameter');
  for (const r of REFUSED) if (r.refuses(raw[r.param])) throw invalidRequest(`${r.why} (param ${r.param})`, r.param, 'unsupported_parameter');
  const format = raw.response_format as { type?: unknown } | undefined;
  if (format !== undefined && format !== null && format.type !== 'text') {
    throw invalidRequest('Only response_format {"type": "text"} is supported', 'response_format', 'unsupported_value');
  }
  const dto = plainToInstance(ChatCompletionRequestDto, raw, { enableImplicitConversion: false });
  const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length) {
    const { path, error } = firstLeaf(errors[0]);
    if ('whitelistValidation' in (error.constraints ?? {})) throw invalidRequest(`Unrecognized request argument supplied: ${path}`, path, 'unknown_parameter');
    // one message for the field, as on the other routes (OpenAI answers one error at a time)
    const [first] = fieldErrors([errors[0]]);
    throw invalidRequest(first?.message ?? `Invalid value for ${path}`, first?.field ?? path, 'invalid_value');
  }
  return dto;
}

function firstLeaf(e: ValidationError, prefix = ''): { path: string; error: ValidationError } {
  const path = !prefix ? e.property : /^\d+$/.test(e.property) ? `${prefix}[${e.property}]` : `${prefix}.${e.property}`;
  return e.children?.length ? firstLeaf(e.children[0], path) : { path, error: e };
}

/** What a turn takes from `messages`. */
export interface TurnInput {
  /** the last user message: the turn's new message */
  content: string;
  /** user and assistant messages before it, oldest first */
  history: LlmMessage[];
  /** system and developer messages, joined; added to the system prompt */
  instructions?: string;
}

/**
 * `messages` as a turn: the last message must come from the user and is the new message; the
 * user and assistant messages before it are the history; system and developer messages become
 * instructions. Tool and function messages, and assistant messages that called tools, are
 * refused: the client never receives a tool call to answer. Content is text, or text parts.
 */
export function turnInput(messages: unknown[]): TurnInput {
  const history: LlmMessage[] = [];
  const instructions: string[] = [];
  let last: { role: string; text: string; index: number } | null = null;
  messages.forEach((m, i) => {
    const msg = m as Record<string, unknown>;
    const role = msg.role;
    if (role === 'tool' || role === 'function') throw invalidRequest(`messages[${i}]: ${role} messages are not supported (Orion runs its own tools; requests may not carry tool results)`, `messages[${i}].role`, 'unsupported_value');
    if (role !== 'system' && role !== 'developer' && role !== 'user' && role !== 'assistant') {
      throw invalidRequest(`messages[${i}].role must be one of system, developer, user, assistant`, `messages[${i}].role`, 'invalid_value');
    }
    if (msg.tool_calls !== undefined && msg.tool_calls !== null && !(Array.isArray(msg.tool_calls) && msg.tool_calls.length === 0)) {
      throw invalidRequest(`messages[${i}].tool_calls is not supported (Orion runs its own tools)`, `messages[${i}].tool_calls`, 'unsupported_parameter');
    }
    const text = textOf(msg.content, i, role === 'assistant');
    if (role === 'system' || role === 'developer') {
      if (text.trim()) instructions.push(text);
      return;
    }
    if (last && last.text.trim()) history.push({ role: last.role as 'user' | 'assistant', content: last.text });
    last = { role, text, index: i };
  });
  const final = last as { role: string; text: string; index: number } | null;
  if (!final || final.role !== 'user') throw invalidRequest('The last message (after any system messages) must be a user message: it is the turn\'s new message', 'messages', 'invalid_value');
  if (!final.text.trim()) throw invalidRequest(`messages[${final.index}].content must not be empty`, `messages[${final.index}].content`, 'invalid_value');
  if (final.text.length > MAX_CONTENT_CHARS) throw invalidRequest(`messages[${final.index}].content is longer than ${MAX_CONTENT_CHARS} characters`, `messages[${final.index}].content`, 'string_above_max_length');
  const joined = instructions.join('\n\n');
  if (joined.length > MAX_INSTRUCTIONS_CHARS) throw invalidRequest(`system and developer messages together are longer than ${MAX_INSTRUCTIONS_CHARS} characters`, 'messages', 'string_above_max_length');
  return { content: final.text, history, ...(joined ? { instructions: joined } : {}) };
}

/** A message's text: a string, or the text of its parts (only text parts); an assistant's may be null. */
function textOf(content: unknown, i: number, nullable: boolean): string {
  if (typeof content === 'string') return content;
  if ((content === null || content === undefined) && nullable) return '';
  if (Array.isArray(content)) {
    return content
      .map((p, j) => {
        const part = p as { type?: unknown; text?: unknown } | null;
        if (part?.type !== 'text' || typeof part.text !== 'string') {
          throw invalidRequest(`messages[${i}].content[${j}]: only text parts are supported`, `messages[${i}].content[${j}].type`, 'unsupported_value');
        }
        return part.text;
      })
      .join('');
  }
  throw invalidRequest(`messages[${i}].content must be a string or an array of text parts`, `messages[${i}].content`, 'invalid_type');
}
