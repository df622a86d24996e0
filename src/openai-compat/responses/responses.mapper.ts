import type { RunEventLike } from '../openai-chunks.mapper';

/** The response id carries the run's requestId, so every instance finds the run from it. */
export const responseId = (requestId: string): string => `resp_${requestId}`;
export const requestIdOf = (id: string): string | null => {
  const m = /^resp_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(id);
  return m ? m[1].toLowerCase() : null;
};
/** Orion's tools appear as calls of one hosted MCP server, so clients record them and never run them. */
export const SERVER_LABEL = 'orion';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

/** What a response shares with the request that made it. */
export interface ResponseFrame {
  requestId: string;
  /** Unix seconds: when the run was created */
  createdAt: number;
  model: string;
  instructions: string | null;
  metadata: Record<string, string>;
  previousResponseId: string | null;
  background: boolean;
}

type OutputText = { type: 'output_text'; text: string; annotations: unknown[]; logprobs: unknown[] };
type MessageItem = { type: 'message'; id: string; role: 'assistant'; status: 'in_progress' | 'completed' | 'incomplete'; content: OutputText[] };
type McpCallItem = { type: 'mcp_call'; id: string; server_label: string; name: string; arguments: string; output: string | null; error: string | null; status: 'in_progress' | 'completed' | 'failed' };
type ApprovalItem = { type: 'mcp_approval_request'; id: string; server_label: string; name: string; arguments: string };
export type OutputItem = MessageItem | McpCallItem | ApprovalItem;
export type ResponseEvent = { type: string; sequence_number: number } & Record<string, unknown>;

/**
 * A run's events as one OpenAI response, event by event: `push` returns the Responses stream
 * events that run event adds (numbered from 0 in order), `snapshot` the response as it stands.
 * Deterministic over the stored events, so a stream resumed with `starting_after` on any
 * instance numbers its events as the first one did. Tool calls Orion ran are `mcp_call` items
 * (output only when the turn was asked to show tool results), a call waiting for a person an
 * `mcp_approval_request` item whose id is the approvalId, the answer one `message` item.
 */
export class ResponseProjection {
  private next = 0;
  private readonly output: OutputItem[] = [];
  private readonly calls = new Map<string, number>();
  private message = -1;
  private text = '';
  private status: ResponseStatus = 'in_progress';
  private usage: { input_tokens: number; output_tokens: number; total_tokens: number; cached: number; reasoning: number; cost?: number; estimated?: true } | null = null;
  private error: { code: string; message: string } | null = null;
  private incomplete: { reason: string } | null = null;
  private conversationId: string | null = null;
  private model: string;
  /** a stored `paused` or `done` was read: nothing follows */
  ended = false;

  constructor(private readonly frame: ResponseFrame) {
    this.model = frame.model;
  }

  push(e: RunEventLike): ResponseEvent[] {
    const d = e.data;
    if (typeof d.conversationId === 'string') this.conversationId ??= d.conversationId;
    switch (e.type) {
      case 'start':
        if (typeof d.model === 'string') this.model = d.model;
        if (d.resumed === true) return [];
        return [this.event('response.created', { response: this.snapshot() }), this.event('response.in_progress', { response: this.snapshot() })];
      case 'chunk':
        return typeof d.content === 'string' && d.content ? [...this.openMessage(), this.delta(d.content)] : [];
      case 'tool_progress':
        return this.tool(d);
      case 'approval_required': {
        const item: ApprovalItem = { type: 'mcp_approval_request', id: String(d.approvalId), server_label: SERVER_LABEL, name: String(d.tool), arguments: JSON.stringify(d.arguments ?? {}) };
        const index = this.output.push(item) - 1;
        return [this.event('response.output_item.added', { output_index: index, item }), this.event('response.output_item.done', { output_index: index, item })];
      }
      case 'error':
        this.error = { code: typeof d.code === 'string' ? d.code : 'internal_error', message: typeof d.message === 'string' ? d.message : 'The turn failed' };
        return [];
      case 'paused':
        this.ended = true;
        this.incomplete = { reason: 'paused' };
        return this.finish('incomplete', 'response.incomplete');
      case 'done':
        return this.done(d);
      default:
        return [];
    }
  }

  snapshot(): Record<string, unknown> {
    return {
      id: responseId(this.frame.requestId),
      object: 'response',
      created_at: this.frame.createdAt,
      status: this.status,
      background: this.frame.background,
      model: this.model,
      output: structuredClone(this.output),
      usage: this.usage && {
        input_tokens: this.usage.input_tokens,
        output_tokens: this.usage.output_tokens,
        total_tokens: this.usage.total_tokens,
        input_tokens_details: { cached_tokens: this.usage.cached },
        output_tokens_details: { reasoning_tokens: this.usage.reasoning },
        // as on /v1/chat/completions: the turn's cost from LLM_PRICES, and whether the figures are a tokenizer's estimate
        ...(this.usage.cost !== undefined ? { orion_cost: this.usage.cost } : {}),
        ...(this.usage.estimated ? { orion_estimated: true } : {}),
      },
      error: this.error && this.status === 'failed' ? this.error : null,
      incomplete_details: this.incomplete,
      instructions: this.frame.instructions,
      metadata: this.frame.metadata,
      previous_response_id: this.frame.previousResponseId,
      conversation: this.conversationId ? { id: this.conversationId } : null,
      parallel_tool_calls: true,
      temperature: null,
      top_p: null,
      max_output_tokens: null,
      tool_choice: 'auto',
      tools: [],
      text: { format: { type: 'text' } },
      truncation: 'disabled',
      store: true,
    };
  }

  private event(type: string, body: Record<string, unknown>): ResponseEvent {
    return { type, sequence_number: this.next++, ...body };
  }

  private openMessage(): ResponseEvent[] {
    if (this.message >= 0) return [];
    const item: MessageItem = { type: 'message', id: `msg_${this.frame.requestId}`, role: 'assistant', status: 'in_progress', content: [] };
    this.message = this.output.push(item) - 1;
    const part: OutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    item.content.push({ ...part });
    return [
      this.event('response.output_item.added', { output_index: this.message, item: { ...item, content: [] } }),
      this.event('response.content_part.added', { output_index: this.message, item_id: item.id, content_index: 0, part }),
    ];
  }

  private delta(text: string): ResponseEvent {
    this.text += text;
    const item = this.output[this.message] as MessageItem;
    item.content[0].text = this.text;
    return this.event('response.output_text.delta', { output_index: this.message, item_id: item.id, content_index: 0, delta: text, logprobs: [] });
  }

  private tool(d: Record<string, unknown>): ResponseEvent[] {
    const callId = String(d.callId ?? '');
    const action = d.action;
    const out: ResponseEvent[] = [];
    let index = this.calls.get(callId);
    if (index === undefined) {
      const item: McpCallItem = { type: 'mcp_call', id: `mcp_${callId}`, server_label: SERVER_LABEL, name: String(d.tool), arguments: JSON.stringify(d.params ?? {}), output: null, error: null, status: 'in_progress' };
      index = this.output.push(item) - 1;
      this.calls.set(callId, index);
      out.push(this.event('response.output_item.added', { output_index: index, item: { ...item } }), this.event('response.mcp_call.in_progress', { output_index: index, item_id: item.id }));
    }
    if (action === 'calling') return out;
    const item = this.output[index] as McpCallItem;
    const failed = action !== 'completed';
    item.status = failed ? 'failed' : 'completed';
    if (failed) item.error = typeof d.outcome === 'string' ? d.outcome : String(action);
    if (d.output !== undefined) item.output = typeof d.output === 'string' ? d.output : JSON.stringify(d.output);
    out.push(this.event(failed ? 'response.mcp_call.failed' : 'response.mcp_call.completed', { output_index: index, item_id: item.id }), this.event('response.output_item.done', { output_index: index, item: { ...item } }));
    return out;
  }

  private done(d: Record<string, unknown>): ResponseEvent[] {
    this.ended = true;
    const u = (d.usage ?? {}) as { promptTokens?: unknown; completionTokens?: unknown; totalTokens?: unknown; cachedTokens?: unknown; reasoningTokens?: unknown; cost?: unknown; estimated?: unknown };
    const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
    const n = (v: unknown) => (isNum(v) ? v : 0);
    this.usage = {
      input_tokens: n(u.promptTokens),
      output_tokens: n(u.completionTokens),
      total_tokens: n(u.totalTokens),
      cached: n(u.cachedTokens),
      reasoning: n(u.reasoningTokens),
      ...(isNum(u.cost) ? { cost: u.cost } : {}),
      ...(u.estimated === true ? { estimated: true as const } : {}),
    };
    const stop = String(d.stopReason);
    // the stored answer is the whole answer, also when the stream held some of it back
    const full = typeof d.fullContent === 'string' ? d.fullContent : this.text;
    const out: ResponseEvent[] = [];
    if (full && stop !== 'error') {
      if (full.startsWith(this.text) && full.length > this.text.length) out.push(...this.openMessage(), this.delta(full.slice(this.text.length)));
      else if (!full.startsWith(this.text) && this.message >= 0) {
        // a takeover superseded part of what was streamed (issue 44): the response holds the
        // stored answer; the deltas already sent cannot be taken back (docs/API.md)
        this.text = full;
        (this.output[this.message] as MessageItem).content[0].text = full;
      }
      out.push(...this.closeMessage(stop === 'max_tokens' ? 'incomplete' : 'completed'));
    }
    if (stop === 'error' || this.error) {
      this.error ??= { code: 'internal_error', message: 'The turn ended without an answer' };
      return [...out, ...this.finish('failed', 'response.failed')];
    }
    if (stop === 'cancelled') return [...out, ...this.finish('cancelled', 'response.incomplete')];
    if (stop === 'max_tokens') {
      this.incomplete = { reason: 'max_output_tokens' };
      return [...out, ...this.finish('incomplete', 'response.incomplete')];
    }
    return [...out, ...this.finish('completed', 'response.completed')];
  }

  private closeMessage(status: 'completed' | 'incomplete'): ResponseEvent[] {
    if (this.message < 0) return [];
    const item = this.output[this.message] as MessageItem;
    item.status = status;
    const part = item.content[0];
    return [
      this.event('response.output_text.done', { output_index: this.message, item_id: item.id, content_index: 0, text: part.text, logprobs: [] }),
      this.event('response.content_part.done', { output_index: this.message, item_id: item.id, content_index: 0, part: { ...part } }),
      this.event('response.output_item.done', { output_index: this.message, item: structuredClone(item) }),
    ];
  }

  private finish(status: ResponseStatus, type: string): ResponseEvent[] {
    this.status = status;
    return [this.event(type, { response: this.snapshot() })];
  }
}
