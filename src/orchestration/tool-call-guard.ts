import { createHash } from 'node:crypto';
import type { CompletedToolCall, InvalidToolCall } from '../llm/tool-call-accumulator';
import type { RepeatPolicy, ToolRunResult } from '../tools/tool-definition';
import type { StreamLoop } from './model-stream';
import { contentLoopDetails, shownCopies } from './loops/content-loop-details';
import { progressDigest } from './loops/result-progress';
import { strikeStopReason, strikesSpent, type StrikeKind, type Strikes } from './loops/strikes';
import type { ProtocolEvent, StopReason } from './protocol-event';
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
 * How a call compares with the calls of its turn so far (see {@link ToolCallGuard.classify}):
 * - `new`: no call of this signature ran yet; it runs;
 * - `twin`: the same call earlier in the same model response; it runs once, both get the result (no strike);
 * - `repeat`: a `refuse` tool's call that already ran; not run, a strike;
 * - `rerun`: a `rerun` tool's call that already ran; it runs again, and the same result is a strike.
 */
export type CallClass<R> =
  | { kind: 'new'; signature: CallSignature | null }
  | { kind: 'twin' | 'repeat' | 'rerun'; signature: CallSignature; earlier: R };

/** An earlier result of the turn, as the no-progress rule compares it. */
export interface ResultRecord {
  name: string;
  /** the signature digest of the call that returned it */
  signature: string;
  phaseIndex: number;
  callId: string;
  /** {@link progressDigest} of its result; absent for results that say nothing (empty, not run) */
  progressDigest?: string;
}


/**
 * The one loop guard every protocol uses (docs/API.md, "Loops"). It classifies each call of a
 * turn (new, twin, repeat, rerun: {@link classify}), each result (progress or nothing new:
 * {@link noProgressOf}) and each streamed text (content loops: ModelStream runs the detector, this
 * guard decides what follows: {@link contentLoop}); words the refusals, notices and traces; and
 * counts strikes against the turn's budget (`maxDuplicateAttempts`). A `refuse` tool's repeat is
 * not run and is a strike; a `rerun` tool's repeat runs again, and a result identical to that
 * signature's previous one is a strike — a loop is the same call giving the same result, a
 * changing result is progress; a call under other arguments whose result is the same as one the
 * same tool already gave is no new information, also a strike. Once the budget is spent the
 * protocol stops its loop and one final call without tools writes the answer, its stop reason
 * naming the kind of the strike that spent it (`duplicate_limit` or `no_progress`). A content
 * loop stops the response at once; one tool-free call writes the answer, and a second loop ends
 * the turn (`content_loop`).
 */
export class ToolCallGuard {
  constructor(private readonly ctx: ProtocolExecutionContext) {}

  /**
   * Classifies a call against the turn's earlier calls: `find` looks a signature digest up (the
   * latest call of that signature); `sameResponse` tells whether that call came in the same model
   * response (such twins are not repeats: the model had not seen their result).
   */
  classify<R>(call: CompletedToolCall, find: (digest: string) => R | undefined, sameResponse: (earlier: R) => boolean = () => false): CallClass<R> {
    const signature = this.signature(call);
    const earlier = signature === null ? undefined : find(signature.digest);
    if (!signature || earlier === undefined) return { kind: 'new', signature };
    if (sameResponse(earlier)) return { kind: 'twin', signature, earlier };
    return { kind: this.policy(call.name) === 'rerun' ? 'rerun' : 'repeat', signature, earlier };
  }

  /**
   * The no-progress rule: a result that says something (see {@link progressDigest}) and equals
   * what the same tool already returned to the model under other arguments, in an earlier model
   * response, taught the model nothing. Returns that earlier result, or undefined (progress).
   * `earlier` holds the results the model had seen before this call's response.
   */
  noProgressOf(name: string, signature: string | null, result: ToolRunResult, earlier: readonly ResultRecord[]): ResultRecord | undefined {
    const digest = progressDigest(result);
    if (digest === undefined) return undefined;
    return earlier.find((r) => r.name === name && r.signature !== signature && r.progressDigest === digest);
  }

  /**
   * A call that returned what `earlier` returned: a strike (kind `no_progress`), traced as
   * `loop_detected`; yields its notice and, when it spends the budget, the limit notice. The
   * protocol gives the model {@link noProgressText} instead of the result.
   */
  *noProgress(state: Strikes, call: CompletedToolCall, earlier: ResultRecord, phaseIndex: number): Generator<ProtocolEvent, void, undefined> {
    const reached = this.countStrike(state, 'no_progress');
    this.traceLoop({ kind: 'no_progress', name: call.name, callId: call.id, arguments: this.ctx.tools.redactArgs(call.name, call.args), phaseIndex, sameAsCallId: earlier.callId, sameAsPhaseIndex: earlier.phaseIndex, strikes: state.duplicateStrikes, limit: this.ctx.budgets.maxDuplicateAttempts });
    yield {
      type: 'notice',
      code: 'no_progress',
      message: `No progress: ${call.name} with other arguments returned exactly what it returned in phase ${earlier.phaseIndex}; the model was told it learned nothing new (strike ${state.duplicateStrikes} of ${this.ctx.budgets.maxDuplicateAttempts}).`,
    };
    if (reached) yield this.limitReached(state);
  }

  /**
   * What the model reads in place of a result that repeats an earlier one (both protocols'
   * wording); `where` names that earlier result as the model sees it (unified: its call id,
   * two-stage: its "[Tool result #N]" message).
   */
  noProgressText(name: string, where: string): string {
    return `This call returned exactly the same result as the earlier ${name} call (${where}): no new information, so it is not repeated here. Asking the same thing in other words will not help. Use what you have, try something really different, or answer the user now.`;
  }

  /**
   * A response stopped at a content loop: traced as `loop_detected`, with its notice. The first
   * loop of a turn gets one tool-free call that writes the answer once (`recover`); a loop after
   * that ends the turn with what was streamed (`end`). `state.contentLoops` counts them.
   */
  *contentLoop(state: { contentLoops: number }, loop: StreamLoop, phaseIndex: number): Generator<ProtocolEvent, 'recover' | 'end', undefined> {
    state.contentLoops += 1;
    const verdict = state.contentLoops > 1 ? 'end' : 'recover';
    this.traceLoop({ kind: 'content', ...contentLoopDetails(loop), phaseIndex, verdict });
    yield {
      type: 'notice',
      code: 'content_loop',
      message:
        `Content loop: the model's ${loop.in === 'reasoning' ? 'reasoning' : 'answer'} repeated one passage (${loop.period} characters) ${loop.repeats} times in a row and was stopped` +
        (loop.in === 'text' ? ` (${shownCopies(loop)} shown); ` : '; ') +
        (verdict === 'recover' ? 'it is asked once, without tools, to write its answer without repeating.' : 'the turn ends with what was said.'),
    };
    return verdict;
  }

  /** The instruction of the tool-free call after a content loop (both protocols): write the answer once. */
  contentLoopInstruction(loop: StreamLoop, text: string): string {
    const passage = text.slice(loop.atChar, loop.atChar + Math.min(loop.period, 200)).trim();
    const where = loop.in === 'reasoning' ? 'Your reasoning' : 'Your previous answer';
    return [
      `${where} started repeating the same passage over and over${passage ? ` ("${passage}${loop.period > 200 ? '…' : ''}")` : ''} and was stopped.`,
      loop.in === 'text' && loop.atChar > 0 ? 'The user has already seen the answer up to that point.' : '',
      'Do not call any tools and do not repeat that passage. Write your final answer to the user now, once and concisely.',
    ].filter(Boolean).join(' ');
  }

  /**
   * What the model is shown of its own looping answer in the call after it: the text up to the
   * end of the passage's first copy (the copies after it would only invite more of the same).
   */
  saidBeforeLoop(loop: StreamLoop, text: string): string {
    return loop.in === 'text' ? text.slice(0, loop.atChar + loop.period) : text;
  }

  /** The stop reason of a turn whose strike budget is spent: the kind of the strike that spent it. */
  strikeStopReason(state: Strikes): Extract<StopReason, 'duplicate_limit' | 'no_progress'> {
    return strikeStopReason(state.lastStrike);
  }

  /** Traces a loop of any kind (`loop_detected`): `orion_loops_total{kind, route}` counts them. */
  private traceLoop(details: Record<string, unknown> & { kind: string }): void {
    this.ctx.trace.record({ requestId: this.ctx.requestId, projectId: this.ctx.projectId, type: 'loop_detected', details });
  }

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

  /** Counts a strike of `kind`; true once the turn's duplicate budget is spent. */
  strike(state: Strikes, kind: StrikeKind): boolean {
    state.duplicateStrikes += 1;
    state.lastStrike = kind;
    if (kind === 'repeat') this.traceLoop({ kind: 'repeat', strikes: state.duplicateStrikes, limit: this.ctx.budgets.maxDuplicateAttempts });
    return this.spent(state);
  }

  /** Whether the turn's duplicate budget is spent: the loop stops, one tool-free call answers. */
  spent(state: Strikes): boolean {
    return strikesSpent(state.duplicateStrikes, this.ctx.budgets.maxDuplicateAttempts);
  }

  /**
   * A repeat of a `refuse` tool (its signature already ran in `earlier.phaseIndex`): not run, a
   * strike, traced; yields the `refused` progress, the notice and, when this strike spends the
   * budget, the limit notice. The protocol tells the model (its own message format) and stops the
   * loop once `spent`.
   */
  *refuseRepeat(state: Strikes, call: CompletedToolCall, digest: string, earlier: { phaseIndex: number }): Generator<ProtocolEvent, void, undefined> {
    const reached = this.countStrike(state, 'repeat');
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
    const reached = sameResult && this.countStrike(state, 'repeat');
    this.traceDuplicate(call, digest, { policy: 'rerun', sameResult }, { ...at, strikes: state.duplicateStrikes, limit: this.ctx.budgets.maxDuplicateAttempts });
    if (!sameResult) return;
    yield this.sameResultNotice(call.name, state.duplicateStrikes);
    if (reached) yield this.limitReached(state);
  }

  /** The limit notice, traced as `orchestration_notice`: the model is asked for its final answer without tools. */
  limitReached(state: Strikes): ProtocolEvent {
    const limit = this.ctx.budgets.maxDuplicateAttempts;
    this.ctx.trace.record({ requestId: this.ctx.requestId, projectId: this.ctx.projectId, type: 'orchestration_notice', details: { code: 'duplicate_limit_reached', strikes: state.duplicateStrikes, limit, stopReason: this.strikeStopReason(state) } });
    const what = state.lastStrike === 'no_progress' ? 'Loop strikes (repeated calls and calls that learned nothing new) reached the limit' : 'Maximum duplicate tool call attempts exceeded';
    return { type: 'notice', code: 'duplicate_limit_reached', message: `${what} (${limit}); the model is asked for its final answer without tools.` };
  }

  /**
   * Counts a strike unless the budget is already spent (unified refuses every repeat of a step,
   * and the strikes after the limit would only repeat its notice); true when this strike spent it.
   */
  private countStrike(state: Strikes, kind: StrikeKind): boolean {
    if (this.spent(state)) return false;
    return this.strike(state, kind);
  }
}

export function invalidName(bad: InvalidToolCall): string {
  return bad.name ?? '(unnamed)';
}

/** Digest of what the model was given from a run: two runs with equal digests returned the same result. */
export function resultDigest(outputText: string): string {
  return createHash('sha256').update(outputText).digest('hex');
}
