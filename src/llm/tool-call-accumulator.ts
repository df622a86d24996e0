import { randomUUID } from 'node:crypto';
import type { LlmToolCall } from './llm-adapter.port';
import { ToolCallIndexResolver } from './tool-call-index';
import { jsonDepth, MAX_JSON_DEPTH } from '../common/util/json-depth.util';

/** A tool call whose arguments are final: safe to validate and execute. */
export interface CompletedToolCall extends LlmToolCall {
  /** internal index (0, 1, 2… in order of first appearance) */
  index: number;
  /** `arguments` parsed; always a plain JSON object */
  args: Record<string, unknown>;
}

/** A call that reached its boundary but cannot be executed (no name, or arguments that are not a JSON object). */
export interface InvalidToolCall {
  index: number;
  id: string;
  name?: string;
  /** the arguments text exactly as streamed */
  rawArguments: string;
  /** why it is invalid (JSON parse error, "not a JSON object", "missing tool name") */
  error: string;
}

export interface ToolCallAccumulatorOptions {
  /** ids for calls the provider sent without one (Ollama, some proxies); default `call_<random>` */
  idFactory?: (index: number) => string;
}

type SlotState = 'open' | 'complete' | 'invalid';

interface Slot {
  index: number;
  id?: string;
  name?: string;
  raw: string;
  state: SlotState;
}

/**
 * Merges `tool-call-delta` events into tool calls, and decides when a call is COMPLETE.
 *
 * A call is complete only when a structural boundary has passed — a fragment of a later call
 * starts, or the stream's `finish` arrives — AND it has a name AND its arguments parse to a JSON
 * object. Parsing alone is not enough: `{"a":1}` parses while `,"b":2}` is still on the wire
 * (vercel/ai#13137), so completing on parse would execute a call the model had not finished.
 * Empty arguments count as `{}`, but only at the boundary (vLLM and OpenAI open a call with
 * `arguments: ""`).
 *
 * Which call a fragment belongs to is decided by {@link ToolCallIndexResolver} (index, or id
 * for providers that send no index). `id` and `name` are set once: later empty strings (Qwen
 * repeats `id: ""`) never overwrite them.
 *
 * Never throws: any input — garbage events included — is either merged or ignored, and calls
 * that end up unusable are reported in {@link invalid} with their raw text and the reason.
 */
export class ToolCallAccumulator {
  private readonly resolver = new ToolCallIndexResolver();
  private readonly slots: Slot[] = [];
  private readonly completedCalls: CompletedToolCall[] = [];
  private readonly invalidCalls: InvalidToolCall[] = [];
  private readonly idFactory: (index: number) => string;
  private isFinished = false;
  /** slots in state `open`, kept as a count: two-stage asks after every fragment */
  private openSlots = 0;

  constructor(options: ToolCallAccumulatorOptions = {}) {
    this.idFactory = options.idFactory ?? (() => `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`);
  }

  /**
   * Feeds one stream event. `tool-call-delta` fragments are merged, `finish` completes every
   * open call, anything else is ignored. Returns the calls this event completed (index order).
   */
  push(event: unknown): CompletedToolCall[] {
    try {
      if (!event || typeof event !== 'object') return [];
      const type = (event as { type?: unknown }).type;
      if (type === 'finish') return this.finish();
      if (type !== 'tool-call-delta' || this.isFinished) return [];
      return this.merge(event as Record<string, unknown>);
    } catch {
      return []; // defensive: the contract is "never throws"
    }
  }

  /** The stream ended normally: every open call reaches its boundary. Idempotent. */
  finish(): CompletedToolCall[] {
    if (this.isFinished) return [];
    this.isFinished = true;
    return this.closeBefore(Number.POSITIVE_INFINITY);
  }

  /** The first call (lowest index) that is complete, if any. */
  firstComplete(): CompletedToolCall | undefined {
    return this.completed[0];
  }

  /** Complete calls in index order. */
  get completed(): readonly CompletedToolCall[] {
    return [...this.completedCalls].sort((a, b) => a.index - b.index);
  }

  /** Calls that reached their boundary but are unusable, in index order. */
  get invalid(): readonly InvalidToolCall[] {
    return [...this.invalidCalls].sort((a, b) => a.index - b.index);
  }

  /** Number of calls that reached their boundary unusable (cheaper than `invalid.length`). */
  get invalidCount(): number {
    return this.invalidCalls.length;
  }

  /** Number of calls still waiting for their boundary. */
  get pendingCount(): number {
    return this.openSlots;
  }

  /** True once `finish()` ran (or a `finish` event was pushed). */
  get finished(): boolean {
    return this.isFinished;
  }

  /** True when at least one tool-call fragment was seen. */
  get sawToolCalls(): boolean {
    return this.slots.length > 0;
  }

  private merge(delta: Record<string, unknown>): CompletedToolCall[] {
    const index = this.resolver.resolve(delta);
    let slot = this.slots[index];
    let completed: CompletedToolCall[] = [];
    if (!slot) {
      // A new call starts: every earlier call has passed its structural boundary.
      completed = this.closeBefore(index);
      slot = { index, raw: '', state: 'open' };
      this.slots[index] = slot;
      this.openSlots += 1;
    }
    if (slot.state !== 'open') return completed; // a late fragment of a closed call changes nothing
    if (slot.id === undefined && typeof delta.id === 'string' && delta.id.length > 0) slot.id = delta.id;
    if (slot.name === undefined && typeof delta.name === 'string' && delta.name.length > 0) slot.name = delta.name;
    if (typeof delta.argumentsFragment === 'string') slot.raw += delta.argumentsFragment;
    return completed;
  }

  private closeBefore(limit: number): CompletedToolCall[] {
    const done: CompletedToolCall[] = [];
    for (const slot of this.slots) {
      if (!slot || slot.state !== 'open' || slot.index >= limit) continue;
      const call = this.close(slot);
      if (call) done.push(call);
    }
    return done;
  }

  private close(slot: Slot): CompletedToolCall | undefined {
    this.openSlots -= 1; // only open slots are closed
    const id = slot.id ?? this.idFactory(slot.index);
    slot.id = id;
    const fail = (error: string) => {
      slot.state = 'invalid';
      this.invalidCalls.push({ index: slot.index, id, name: slot.name, rawArguments: slot.raw, error });
      return undefined;
    };
    if (!slot.name || slot.name.trim() === '') return fail('missing tool name');
    const text = slot.raw.trim() === '' ? '{}' : slot.raw;
    if (jsonDepth(text) > MAX_JSON_DEPTH) return fail(`arguments are nested deeper than ${MAX_JSON_DEPTH} levels`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      return fail(`arguments are not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return fail(`arguments are not a JSON object (got ${parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : typeof parsed})`);
    }
    slot.state = 'complete';
    const call: CompletedToolCall = { index: slot.index, id, name: slot.name, arguments: text, args: parsed as Record<string, unknown> };
    this.completedCalls.push(call);
    return call;
  }
}
