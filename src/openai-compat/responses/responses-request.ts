import { MAX_CONTENT_CHARS, turnInput, type TurnInput } from '../chat-completion-request';
import { invalidRequest } from '../openai-error';
import { SERVER_LABEL } from './responses.mapper';
import { UUID_PATTERN } from '../../common/util/uuid';

/** A Responses request as Orion runs it. */
export interface ResponsesRequest {
  model: string;
  turn: TurnInput;
  stream: boolean;
  background: boolean;
  previousResponseId?: string;
  /** Orion's conversation id (`conversation` as a string or `{id}`) */
  conversationId?: string;
  metadata: Record<string, string>;
  /** the request's own `instructions`, echoed on the response */
  instructions: string | null;
}

type Check = (v: unknown) => boolean;
const absent: Check = (v) => v === undefined || v === null;

/**
 * Parameters OpenAI defines that Orion takes only at their neutral value, because clients such
 * as the Agents SDK send them on every request: anything else is refused by name, never ignored.
 * Orion runs its own tools and its own model settings; it keeps every turn (store).
 */
const NEUTRAL: Array<{ param: string; ok: Check; why: string }> = [
  { param: 'tools', ok: (v) => absent(v) || (Array.isArray(v) && v.length === 0), why: 'Orion runs its own tools server-side; a request may not declare tools' },
  { param: 'tool_choice', ok: (v) => absent(v) || v === 'auto', why: 'Orion runs its own tools server-side; only tool_choice "auto" is accepted' },
  { param: 'parallel_tool_calls', ok: (v) => absent(v) || v === true, why: 'Orion runs its own tools server-side; only parallel_tool_calls true is accepted' },
  { param: 'include', ok: (v) => absent(v) || (Array.isArray(v) && v.length === 0), why: 'include is not supported' },
  { param: 'text', ok: (v) => absent(v) || isTextFormat(v), why: 'Only text {"format": {"type": "text"}} is supported' },
  { param: 'store', ok: (v) => absent(v) || v === true, why: 'Orion stores every turn; store false is not supported' },
  { param: 'truncation', ok: (v) => absent(v) || v === 'disabled', why: 'Orion budgets the context itself; only truncation "disabled" is accepted' },
  { param: 'stream_options', ok: absent, why: 'stream_options is not supported' },
  ...['temperature', 'top_p', 'max_output_tokens', 'max_tool_calls', 'top_logprobs', 'reasoning', 'prompt', 'context_management'].map((param) => ({
    param,
    ok: absent,
    why: `${param} is not supported: Orion's model settings are the server's`,
  })),
  ...['prompt_cache_key', 'prompt_cache_retention', 'prompt_cache_options', 'safety_identifier', 'service_tier', 'user'].map((param) => ({ param, ok: absent, why: `${param} is not supported` })),
];
const ACCEPTED = new Set(['model', 'input', 'instructions', 'stream', 'background', 'previous_response_id', 'conversation', 'metadata', ...NEUTRAL.map((n) => n.param)]);

function isTextFormat(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const { format, verbosity, ...rest } = v as { format?: { type?: unknown }; verbosity?: unknown };
  return Object.keys(rest).length === 0 && (absent(format) || format?.type === 'text') && (absent(verbosity) || verbosity === 'medium');
}

/** A `POST /v1/responses` body as a checked request, or a 400 in OpenAI's shape naming the parameter. */
export function readResponsesRequest(body: unknown): ResponsesRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object', null, 'invalid_body');
  const raw = body as Record<string, unknown>;
  for (const key of Object.keys(raw)) if (!ACCEPTED.has(key)) throw invalidRequest(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  for (const n of NEUTRAL) if (!n.ok(raw[n.param])) throw invalidRequest(`${n.why} (param ${n.param})`, n.param, 'unsupported_parameter');
  if (typeof raw.model !== 'string' || !raw.model) throw invalidRequest('model is required (orion-unified, orion-two-stage or an allowed model)', 'model', 'missing_required_parameter');
  if (absent(raw.input)) throw invalidRequest('input is required: a string or a list of message items', 'input', 'missing_required_parameter');
  const instructions = optionalString(raw, 'instructions');
  const turn = turnOf(raw.input, instructions);
  const previousResponseId = optionalString(raw, 'previous_response_id') ?? undefined;
  const conversationId = conversationOf(raw.conversation);
  if (previousResponseId && conversationId) throw invalidRequest('previous_response_id and conversation cannot both be given', 'previous_response_id', 'invalid_value');
  return {
    model: raw.model,
    turn,
    stream: flag(raw, 'stream'),
    background: flag(raw, 'background'),
    ...(previousResponseId ? { previousResponseId } : {}),
    ...(conversationId ? { conversationId } : {}),
    metadata: metadataOf(raw.metadata),
    instructions,
  };
}

function optionalString(raw: Record<string, unknown>, param: string): string | null {
  const v = raw[param];
  if (absent(v)) return null;
  if (typeof v !== 'string') throw invalidRequest(`${param} must be a string`, param, 'invalid_type');
  return v;
}

function flag(raw: Record<string, unknown>, param: string): boolean {
  const v = raw[param];
  if (absent(v)) return false;
  if (typeof v !== 'boolean') throw invalidRequest(`${param} must be a boolean`, param, 'invalid_type');
  return v;
}

function conversationOf(v: unknown): string | undefined {
  if (absent(v)) return undefined;
  const id = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as { id?: unknown }).id : v;
  if (typeof id !== 'string' || !UUID_PATTERN.test(id)) {
    throw invalidRequest("conversation must be an Orion conversation id (a UUID), or {\"id\": …}", 'conversation', 'invalid_value');
  }
  return id;
}

function metadataOf(v: unknown): Record<string, string> {
  if (absent(v)) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidRequest('metadata must be an object of strings', 'metadata', 'invalid_type');
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > 16) throw invalidRequest('metadata may hold at most 16 keys', 'metadata', 'invalid_value');
  for (const [k, val] of entries) {
    if (typeof val !== 'string' || val.length > 512 || k.length > 64) throw invalidRequest(`metadata.${k} must be a string of at most 512 characters (keys at most 64)`, `metadata.${k}`, 'invalid_value');
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/**
 * `input` (a string, or message items) and `instructions` as a turn: the last item must be the
 * user's new message, earlier user and assistant messages are the history, system and developer
 * messages join `instructions`. Items other than messages (function calls and their outputs,
 * reasoning, references) and parts other than text are refused by name: Orion runs its own tools.
 */
function turnOf(input: unknown, instructions: string | null): TurnInput {
  const head = instructions ? [{ role: 'system', content: instructions }] : [];
  if (typeof input === 'string') {
    if (!input.trim()) throw invalidRequest('input must not be empty', 'input', 'invalid_value');
    if (input.length > MAX_CONTENT_CHARS) throw invalidRequest(`input is longer than ${MAX_CONTENT_CHARS} characters`, 'input', 'string_above_max_length');
    return turnInput([...head, { role: 'user', content: input }]);
  }
  if (!Array.isArray(input) || input.length === 0) throw invalidRequest('input must be a string or a non-empty list of message items', 'input', 'invalid_type');
  // Orion's own output items sent back (a client replaying a response's output as history) record
  // what Orion ran: the answer is in the message items, the calls are not the model's to repeat
  const messages = input.flatMap((item, i) => (isOwnCallItem(item) ? [] : [messageOf(item, i)]));
  const lastTurn = [...messages].reverse().find((m) => m.role !== 'system' && m.role !== 'developer');
  const lastIndex = lastTurn ? messages.lastIndexOf(lastTurn) : -1;
  if (!lastTurn || lastTurn.role !== 'user') throw invalidRequest("The last message item (after any system messages) must be the user's: it is the turn's new message", 'input', 'invalid_value');
  if (!lastTurn.content.trim()) throw invalidRequest(`input[${lastIndex}].content must not be empty`, `input[${lastIndex}].content`, 'invalid_value');
  if (lastTurn.content.length > MAX_CONTENT_CHARS) throw invalidRequest(`input[${lastIndex}].content is longer than ${MAX_CONTENT_CHARS} characters`, `input[${lastIndex}].content`, 'string_above_max_length');
  return turnInput([...head, ...messages]);
}

/** An `mcp_call` or `mcp_approval_request` item of Orion's own server, as a response's output holds them. */
function isOwnCallItem(item: unknown): boolean {
  const m = (item ?? {}) as { type?: unknown; server_label?: unknown };
  return (m.type === 'mcp_call' || m.type === 'mcp_approval_request') && m.server_label === SERVER_LABEL;
}

function messageOf(item: unknown, i: number): { role: string; content: string } {
  const m = (item ?? {}) as Record<string, unknown>;
  if (m.type !== undefined && m.type !== 'message') {
    throw invalidRequest(`input[${i}]: ${String(m.type)} items are not supported (Orion runs its own tools; only message items are taken)`, `input[${i}].type`, 'unsupported_value');
  }
  if (m.role !== 'user' && m.role !== 'assistant' && m.role !== 'system' && m.role !== 'developer') {
    throw invalidRequest(`input[${i}].role must be one of user, assistant, system, developer`, `input[${i}].role`, 'invalid_value');
  }
  if (typeof m.content === 'string') return { role: m.role, content: m.content };
  if (!Array.isArray(m.content)) throw invalidRequest(`input[${i}].content must be a string or a list of text parts`, `input[${i}].content`, 'invalid_type');
  const text = m.content
    .map((p, j) => {
      const part = (p ?? {}) as { type?: unknown; text?: unknown };
      if ((part.type !== 'input_text' && part.type !== 'output_text') || typeof part.text !== 'string') {
        throw invalidRequest(`input[${i}].content[${j}]: only input_text and output_text parts are supported`, `input[${i}].content[${j}].type`, 'unsupported_value');
      }
      return part.text;
    })
    .join('');
  return { role: m.role, content: text };
}
