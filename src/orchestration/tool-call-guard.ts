import { createHash } from 'node:crypto';
import type { CompletedToolCall, InvalidToolCall } from '../llm/tool-call-accumulator';
import type { RepeatPolicy } from '../tools/tool-definition';
import type { ProtocolEvent } from './protocol-event';
import type { ProtocolExecutionContext } from './protocol-strategy';

/** A call's identity for duplicate detection: the canonical signature and its digest. */
export interface CallSignature {
  /** canonical `name + arguments + project`; may hold secret values, never stored or traced */
  canonical: string;
  /** sha256 of `canonical`: what checkpoints and traces keep */
  digest: string;
}

/** How a repeated call was handled: its tool's policy and, when it ran again, whether its result repeated. */
export interface RepeatDecision {
  policy: RepeatPolicy;
  /** null when the call was not run again (policy `refuse`) */
  sameResult: boolean | null;
}

/**
 * The one tool-call guard both protocols use: signatures for duplicate detection, the repeat
 * policy of each tool, the refusal events and traces of duplicate and unusable calls, and
 * strikes against the turn's duplicate budget (`maxDuplicateAttempts`). A `refuse` tool's
 * repeat is not run and is a strike, on both routes; a `rerun` tool's repeat runs again, and a
 * result identical to that signature's previous one is a strike — a loop is the same call giving
 * the same result, a changing result is progress. Once the budget is spent the protocol stops its
 * loop and one final call without tools writes the answer.
 */
export class ToolCallGuard {
  constructor(private readonly ctx: ProtocolExecutionContext) {}

  /** null when the arguments are not a JSON object (such a call is never a duplicate). */
  signature(call: CompletedToolCall): CallSignature | null {
    const canonical = this.ctx.tools.signature({ name: call.name, arguments: call.args }, this.ctx.projectId);
    return canonical === null ? null : { canonical, digest: createHash('sha256').update(canonical).digest('hex') };
  }

  /** What a repeated identical call of this tool gets. */
  policy(name: string): RepeatPolicy {
    return this.ctx.tools.repeatPolicy?.(name) ?? 'refuse';
  }

  /** Traces a repeated call (arguments redacted, the signature as a digest) with the decision and what the protocol did. */
  traceDuplicate(call: CompletedToolCall, digest: string, decision: RepeatDecision, details: Record<string, unknown>): void {
    this.ctx.trace.record({
      requestId: this.ctx.requestId,
      projectId: this.ctx.projectId,
      type: 'duplicate_tool_call',
      details: { name: call.name, callId: call.id, arguments: this.ctx.tools.redactArgs(call.name, call.args), signature: digest, ...decision, ...details },
    });
  }

  /** The notice of a rerun whose result repeated: a loop strike. */
  sameResultNotice(name: string, strikes: number): ProtocolEvent {
    return {
      type: 'notice',
      code: 'duplicate_tool_call',
      message: `Repeated tool result: ${name} ran again with the same arguments and returned the same result as before (strike ${strikes} of ${this.ctx.budgets.maxDuplicateAttempts}).`,
    };
  }

  /** Traces a call whose arguments never became a JSON object (or that had no name). */
  traceInvalid(bad: InvalidToolCall, details: Record<string, unknown> = {}): void {
    const name = invalidName(bad);
    this.ctx.trace.record({
      requestId: this.ctx.requestId,
      projectId: this.ctx.projectId,
      type: 'tool_call_invalid',
      details: { name, callId: bad.id, rawArguments: this.ctx.tools.redactArgs(name, bad.rawArguments.slice(0, 2000)), error: bad.error, ...details },
    });
  }

  /** The `tool_progress` event of a call that was not run. */
  refused(call: CompletedToolCall | InvalidToolCall): ProtocolEvent {
    if ('rawArguments' in call) {
      const name = invalidName(call);
      return { type: 'tool_progress', tool: name, callId: call.id, action: 'refused', params: this.ctx.tools.redactArgs(name, call.rawArguments.slice(0, 500)), isError: true };
    }
    return { type: 'tool_progress', tool: call.name, callId: call.id, action: 'refused', params: this.ctx.tools.redactArgs(call.name, call.args), isError: false };
  }

  /** Counts a strike; true once the turn's duplicate budget is spent. */
  strike(state: Strikes): boolean {
    state.duplicateStrikes += 1;
    return this.spent(state);
  }

  /** Whether the turn's duplicate budget is spent: the loop stops, one tool-free call answers. */
  spent(state: Strikes): boolean {
    return state.duplicateStrikes >= this.ctx.budgets.maxDuplicateAttempts;
  }

  /**
   * A repeat of a `refuse` tool (its signature already ran in `earlier.phaseIndex`): not run, a
   * strike, traced; yields the `refused` progress, the notice and, when this strike spends the
   * budget, the limit notice. The protocol tells the model (its own message format) and stops the
   * loop once `spent`.
   */
  *refuseRepeat(state: Strikes, call: CompletedToolCall, digest: string, earlier: { phaseIndex: number }): Generator<ProtocolEvent, void, undefined> {
    const reached = this.countStrike(state);
    this.traceDuplicate(call, digest, { policy: 'refuse', sameResult: null }, { firstPhaseIndex: earlier.phaseIndex, strikes: state.duplicateStrikes, limit: this.ctx.budgets.maxDuplicateAttempts });
    yield this.refused(call);
    yield {
      type: 'notice',
      code: 'duplicate_tool_call',
      message: `Duplicate tool call detected: ${call.name} with the same arguments already ran in phase ${earlier.phaseIndex}; it was not run again and its earlier result was pointed out to the model.`,
    };
    if (reached) yield this.limitReached(state);
  }

  /**
   * A `rerun` tool ran again (its signature's previous run was in `previous.phaseIndex`, this one
   * in `phaseIndex`): traced; the same result is a strike, with its notice and, when it spends
   * the budget, the limit notice.
   */
  *rerunVerdict(state: Strikes, call: CompletedToolCall, digest: string, sameResult: boolean, at: { firstPhaseIndex: number; phaseIndex: number }): Generator<ProtocolEvent, void, undefined> {
    const reached = sameResult && this.countStrike(state);
    this.traceDuplicate(call, digest, { policy: 'rerun', sameResult }, { ...at, strikes: state.duplicateStrikes, limit: this.ctx.budgets.maxDuplicateAttempts });
    if (!sameResult) return;
    yield this.sameResultNotice(call.name, state.duplicateStrikes);
    if (reached) yield this.limitReached(state);
  }

  /** The limit notice, traced as `orchestration_notice`: the model is asked for its final answer without tools. */
  limitReached(state: Strikes): ProtocolEvent {
    const limit = this.ctx.budgets.maxDuplicateAttempts;
    this.ctx.trace.record({ requestId: this.ctx.requestId, projectId: this.ctx.projectId, type: 'orchestration_notice', details: { code: 'duplicate_limit_reached', strikes: state.duplicateStrikes, limit } });
    return { type: 'notice', code: 'duplicate_limit_reached', message: `Maximum duplicate tool call attempts exceeded (${limit}); the model is asked for its final answer without tools.` };
  }

  /**
   * Counts a strike unless the budget is already spent (unified refuses every repeat of a step,
   * and the strikes after the limit would only repeat its notice); true when this strike spent it.
   */
  private countStrike(state: Strikes): boolean {
    if (this.spent(state)) return false;
    return this.strike(state);
  }
}

/** The strike counter a protocol keeps in its turn state. */
export interface Strikes {
  duplicateStrikes: number;
}

export function invalidName(bad: InvalidToolCall): string {
  return bad.name ?? '(unnamed)';
}

/** Digest of what the model was given from a run: two runs with equal digests returned the same result. */
export function resultDigest(outputText: string): string {
  return createHash('sha256').update(outputText).digest('hex');
}
