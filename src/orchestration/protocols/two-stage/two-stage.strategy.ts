import { Injectable } from '@nestjs/common';
import type { LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { CompletedToolCall, InvalidToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolProgress } from '../../../tools/tool-definition';
import { ModelStream } from '../../model-stream';
import { invalidName, resultDigest, ToolCallGuard } from '../../tool-call-guard';
import { argumentPolicyOf } from '../../untrusted-output';
import { offeredTools, phaseEdge, shownArguments, toolErrorStage, toolFinishedEvent, traceLateDeltas, traceStep } from '../../protocol-steps.util';
import { addUsage, emptyUsage, TRUNCATED_NOTICE, type ProtocolEvent, type StopReason, type TurnUsage } from '../../protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../protocol-strategy';
import {
  parseTwoStageCheckpoint,
  TWO_STAGE_CHECKPOINT_VERSION,
  type ExecutedToolRecord,
  type TwoStageCheckpoint,
} from '../../run-state/run-checkpoint';
import { MAX_RESPONSE_TOKENS, PARAGRAPH_BREAK, temperatureFor } from '../prompts';
import { SourcesCollector } from '../unified/unified.sources';
import { forcedFinal, NOTICES, type ForcedReason, type TwoStageCounters } from './two-stage.budgets';
import { FORCED_FINAL_FALLBACK, TWO_STAGE_SYSTEM_PROMPT, forcedFinalInstruction, invalidArgumentsMessage, refusalMessage, toolResultMessage } from './two-stage.messages';

/** How one iteration of the loop ended (typed outcomes: every case is handled). */
type StepOutcome =
  | { kind: 'run_again' }
  | { kind: 'refused_duplicate' }
  | { kind: 'final'; stopReason: StopReason }
  | { kind: 'paused'; resumeFromPhaseIndex: number };

/** Mutable state of one turn; exactly what a checkpoint stores (less its version). */
type TurnState = Omit<TwoStageCheckpoint, 'schemaVersion'> & { usage: TurnUsage };

/**
 * Two-stage triggered phases (issue #4): an action phase streams the model with the tools; the
 * first COMPLETE tool call ends it (upstream aborted; nothing of that response after the call —
 * later calls, text — is streamed or kept, see ModelStream); a tool phase runs exactly that call
 * and injects its result as a boxed system message after the system prompt. A call whose canonical signature already ran is refused, not run. Budgets —
 * executed tools (maxPhaseCycles) and refused duplicates (maxDuplicateAttempts) — force one
 * final model call that offers no tools. Every path ends in exactly one `done` (or `paused`).
 */
@Injectable()
export class TwoStageStrategy implements ProtocolStrategy {
  readonly name = 'two-stage';
  readonly capabilities = { pausePoints: true, resume: true, tools: true };

  readCheckpoint(state: unknown): { baseMessages: LlmMessage[] } {
    return parseTwoStageCheckpoint(state);
  }

  async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
    const state = this.initialState(ctx);
    const specs = await ctx.tools.specs();
    let forced: ForcedReason | null = forcedFinal(this.counters(state), ctx.budgets);
    // some answer text was streamed: the next phase's text starts after a paragraph break
    let wrote = false;
    // a refused call does not end its action phase: the model is asked again in the same phase
    let continuing = false;
    // the model's latest text: the next action phase's tools are re-ranked with it
    let latestText = '';

    while (true) {
      if (ctx.signal.aborted) return yield this.done(state, 'cancelled');
      // the action phase's text streams from the model to the consumer (the hot path)
      const stream: ModelStream = yield* this.startAction(ctx, state, specs, forced, wrote, continuing, latestText);
      const stepText = (yield* stream.step()).text;
      if (stepText.length > 0) wrote = true;
      if (stepText.trim()) latestText = stepText;
      const outcome: StepOutcome = yield* this.endAction(ctx, state, specs, forced, stream);
      switch (outcome.kind) {
        case 'final':
          return yield this.done(state, outcome.stopReason);
        case 'paused':
          return yield { type: 'paused', resumeFromPhaseIndex: outcome.resumeFromPhaseIndex };
        case 'run_again':
        case 'refused_duplicate':
          continuing = outcome.kind === 'refused_duplicate';
          forced = forcedFinal(this.counters(state), ctx.budgets);
          break;
      }
    }
  }

  /**
   * Starts a model call: in a new action phase, or (after a refusal) in the same one. Tools are
   * offered unless a budget forces the answer.
   */
  private *startAction(
    ctx: ProtocolExecutionContext,
    s: TurnState,
    specs: LlmToolSpec[],
    forced: ForcedReason | null,
    wrote: boolean,
    continuing: boolean,
    latestText: string,
  ): Generator<ProtocolEvent, ModelStream, undefined> {
    const phaseIndex = continuing ? s.phaseIndex : ++s.phaseIndex;
    if (!continuing) yield* phaseEdge(ctx, 'start', 'action_phase', phaseIndex, s.cycleIndex);

    const offerTools = !forced && specs.length > 0;
    const offered = offerTools ? offeredTools(ctx, specs, { index: phaseIndex, calledThisTurn: s.executed.map((e) => e.name), latestModelText: latestText || undefined }) : [];
    const messages = this.modelMessages(ctx, s, forced);
    traceStep(ctx, 'llm_request', {
      phase: 'action_phase',
      phaseIndex,
      messages: messages.length,
      tools: offered.map((t) => t.name),
      toolChoice: offerTools ? 'auto' : 'none',
      forced,
      temperature: temperatureFor(ctx.mode),
    });
    return new ModelStream(
      ctx.llm,
      {
        messages,
        tools: offerTools ? offered : undefined,
        toolChoice: offerTools ? 'auto' : 'none',
        temperature: temperatureFor(ctx.mode),
        maxTokens: MAX_RESPONSE_TOKENS,
        requestId: ctx.requestId,
        // the action phase decides tools (or answers): no reasoning where the server can skip it
        disableReasoning: true,
      },
      ctx.signal,
      { stopAtFirstCompleteCall: true, ignoreToolCalls: !offerTools, lead: wrote ? PARAGRAPH_BREAK : undefined },
    );
  }

  /** Closes the action phase; a new call gets its tool phase, a repeated one is refused. */
  private async *endAction(
    ctx: ProtocolExecutionContext,
    s: TurnState,
    specs: LlmToolSpec[],
    forced: ForcedReason | null,
    stream: ModelStream,
  ): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
    const res = stream.close();
    const phaseIndex = s.phaseIndex;
    addUsage(s.usage, res.usage);
    traceLateDeltas(ctx, phaseIndex, res);

    if (ctx.signal.aborted) {
      yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'cancelled');
      return { kind: 'final', stopReason: 'cancelled' };
    }
    if (res.error) {
      traceStep(ctx, 'llm_error', { phaseIndex, ...res.error });
      yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'error');
      yield { type: 'error', code: `llm_${res.error.code}`, message: res.error.message, retryable: res.error.retryable };
      return { kind: 'final', stopReason: 'error' };
    }
    traceStep(ctx, 'llm_response', {
      phaseIndex,
      finishReason: res.finishReason ?? null,
      textChars: res.text.length,
      reasoningChars: res.reasoningChars,
      toolCall: res.calls[0] ? { name: res.calls[0].name, id: res.calls[0].id } : null,
      invalidCalls: res.invalid.length,
      stoppedEarly: res.stoppedEarly,
      usage: res.usage ?? null,
    });

    const call = res.calls[0];
    if (forced && res.text.trim() === '') {
      // the model insisted on tools when none were offered: the user still gets an answer
      yield { type: 'chunk', content: FORCED_FINAL_FALLBACK };
    }
    if (forced || (!call && res.invalid.length === 0)) {
      const truncated = res.finishReason === 'length';
      if (truncated) yield TRUNCATED_NOTICE;
      // a forced answer keeps saying which budget forced it; the notice says it was cut off
      const stopReason: StopReason = forced ?? (truncated ? 'max_tokens' : 'final_answer');
      yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, stopReason);
      return { kind: 'final', stopReason };
    }
    if (!call) {
      // refused in the action phase, which goes on: only an executed tool opens a tool phase
      yield* this.handleInvalid(ctx, s, res.invalid[0], specs);
      return { kind: 'refused_duplicate' };
    }

    // stored as a digest: checkpoints keep no argument values (secrets included)
    const guard = new ToolCallGuard(ctx);
    const signature = guard.signature(call)?.digest ?? null;
    // the latest run of this signature: a rerun compares its result with that one
    const earlier = signature ? s.executed.findLast((e) => e.signature === signature) : undefined;
    const toolCalls: ProtocolEvent = { type: 'tool_calls', calls: [{ id: call.id, name: call.name, arguments: shownArguments(ctx, call) }] };
    if (earlier && guard.policy(call.name) === 'refuse') {
      yield toolCalls;
      yield* this.refuseDuplicate(ctx, s, call, earlier);
      return { kind: 'refused_duplicate' };
    }
    yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'tool_call');
    yield toolCalls;
    return yield* this.toolPhase(ctx, s, call, signature, earlier);
  }

  /** Runs exactly one call through the ToolRunner and injects its result. */
  private async *toolPhase(
    ctx: ProtocolExecutionContext,
    s: TurnState,
    call: CompletedToolCall,
    signature: string | null,
    previous?: ExecutedToolRecord,
  ): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
    const phaseIndex = ++s.phaseIndex;
    s.cycleIndex += 1;
    yield* phaseEdge(ctx, 'start', 'tool_phase', phaseIndex, s.cycleIndex);
    yield { type: 'tool_progress', tool: call.name, callId: call.id, action: 'calling', params: ctx.tools.redactArgs(call.name, call.args), isError: false };

    const progress: ToolProgress[] = [];
    const result = await ctx.tools.run(
      { name: call.name, arguments: call.arguments, callId: call.id },
      { projectId: ctx.projectId, requestId: ctx.requestId, signal: ctx.signal, progress: (p) => progress.push(p), ...argumentPolicyOf(ctx) },
    );
    ctx.untrusted?.learn(result.outputText);
    for (const p of progress) yield { type: 'tool_phase', toolId: call.name, stage: p.stage, message: p.message, metadata: p.metadata };
    const failure = toolErrorStage(ctx, call, result);
    if (failure) yield failure;

    yield toolFinishedEvent(ctx, call, result);
    if (SourcesCollector.reports(call.name, result)) {
      // the turn's sources so far, right after the tool that found them (before the answer
      // streams); each one replaces the last, so the turn's last `sources` event is complete
      const sources = SourcesCollector.from(s.sources);
      sources.addToolResult(call.name, result);
      s.sources = sources.snapshot();
      yield sources.toEvent();
    }
    const shownArgs = shownArguments(ctx, call);
    s.injected.push({ role: 'system', content: toolResultMessage(s.cycleIndex, call.name, shownArgs, result) });
    s.executed.push({
      signature: signature ?? `unsigned:${call.id}`,
      name: call.name,
      callId: call.id,
      arguments: shownArgs,
      phaseIndex,
      outcome: result.outcome,
      resultDigest: resultDigest(result.outputText),
    });
    if (previous) yield* this.rerunVerdict(ctx, s, call, previous, s.executed[s.executed.length - 1]);

    if (ctx.signal.aborted) {
      yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, 'cancelled');
      return { kind: 'final', stopReason: 'cancelled' };
    }
    yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, result.outcome);
    yield { type: 'checkpoint', phaseIndex, state: this.checkpoint(s) as unknown as Record<string, unknown> };

    if (forcedFinal(this.counters(s), ctx.budgets) === 'cycle_budget') {
      traceStep(ctx, 'orchestration_notice', { code: 'cycle_budget_reached', executedTools: s.cycleIndex });
      yield { type: 'notice', code: 'cycle_budget_reached', message: NOTICES.cycleBudget(ctx.budgets.maxPhaseCycles) };
    }
    // natural pause point: right after a tool result is traced and checkpointed
    if (ctx.control.pauseRequested()) return { kind: 'paused', resumeFromPhaseIndex: phaseIndex };
    return { kind: 'run_again' };
  }

  /** A `rerun` tool ran again: the same result as its signature's previous run is a loop strike. */
  private *rerunVerdict(
    ctx: ProtocolExecutionContext,
    s: TurnState,
    call: CompletedToolCall,
    previous: ExecutedToolRecord,
    now: ExecutedToolRecord,
  ): Generator<ProtocolEvent, void, undefined> {
    const sameResult = previous.resultDigest !== undefined && previous.resultDigest === now.resultDigest;
    yield* new ToolCallGuard(ctx).rerunVerdict(s, call, now.signature, sameResult, { firstPhaseIndex: previous.phaseIndex, phaseIndex: now.phaseIndex });
  }

  private async *refuseDuplicate(
    ctx: ProtocolExecutionContext,
    s: TurnState,
    call: CompletedToolCall,
    earlier: ExecutedToolRecord,
  ): AsyncGenerator<ProtocolEvent, void, undefined> {
    yield* new ToolCallGuard(ctx).refuseRepeat(s, call, earlier.signature, earlier);
    s.injected.push({ role: 'system', content: refusalMessage(call.name, shownArguments(ctx, call), earlier, s.executed.indexOf(earlier) + 1) });
  }

  /** Arguments that never became a JSON object: told once with the schema; a repeat is a strike. */
  private async *handleInvalid(
    ctx: ProtocolExecutionContext,
    s: TurnState,
    bad: InvalidToolCall,
    specs: LlmToolSpec[],
  ): AsyncGenerator<ProtocolEvent, void, undefined> {
    const guard = new ToolCallGuard(ctx);
    const name = invalidName(bad);
    // told once per turn: any later unusable call, whatever tool it names, is a strike, so a
    // model inventing new names cannot loop without bound
    const repeat = s.toldInvalid.length > 0;
    guard.traceInvalid(bad, { repeat });
    yield guard.refused(bad);
    yield { type: 'notice', code: 'invalid_tool_arguments', message: NOTICES.invalidArguments(name) };
    if (!repeat) {
      s.toldInvalid.push(name);
      s.injected.push({ role: 'system', content: invalidArgumentsMessage(name, bad.error, specs.find((t) => t.name === name)?.parameters) });
      return;
    }
    const spent = guard.strike(s);
    yield { type: 'notice', code: 'duplicate_tool_call', message: `Duplicate tool call detected: another tool call (${name}) whose arguments are not a JSON object.` };
    if (spent) yield guard.limitReached(s);
  }

  /** System prompt, then injected tool results and refusals, then the conversation. */
  private modelMessages(ctx: ProtocolExecutionContext, s: TurnState, forced: ForcedReason | null): LlmMessage[] {
    const system = ctx.systemContext ? `${TWO_STAGE_SYSTEM_PROMPT}\n\n${ctx.systemContext}` : TWO_STAGE_SYSTEM_PROMPT;
    const out: LlmMessage[] = [{ role: 'system', content: system }, ...s.injected, ...s.baseMessages];
    if (forced) out.push({ role: 'system', content: forcedFinalInstruction(forced) });
    return out;
  }

  private done(s: TurnState, stopReason: StopReason): ProtocolEvent {
    // fullContent is what was streamed; the executor, which saw every chunk, fills it in
    return { type: 'done', fullContent: '', stopReason, usage: s.usage };
  }

  private counters(s: TurnState): TwoStageCounters {
    return { executedTools: s.executed.length, duplicateStrikes: s.duplicateStrikes };
  }

  private initialState(ctx: ProtocolExecutionContext): TurnState {
    if (ctx.resumeFrom) {
      const c = parseTwoStageCheckpoint(ctx.resumeFrom.state);
      // a resumed leg remembers what the tool output of the earlier legs brought in
      for (const m of c.injected) ctx.untrusted?.learn(m.content ?? '');
      return { ...c, usage: { ...c.usage } };
    }
    return {
      phaseIndex: 0,
      cycleIndex: 0,
      baseMessages: ctx.messages,
      injected: [],
      executed: [],
      duplicateStrikes: 0,
      toldInvalid: [],
      usage: emptyUsage(),
    };
  }

  private checkpoint(s: TurnState): TwoStageCheckpoint {
    return {
      schemaVersion: TWO_STAGE_CHECKPOINT_VERSION,
      phaseIndex: s.phaseIndex,
      cycleIndex: s.cycleIndex,
      baseMessages: s.baseMessages,
      injected: [...s.injected],
      executed: [...s.executed],
      duplicateStrikes: s.duplicateStrikes,
      toldInvalid: [...s.toldInvalid],
      usage: { ...s.usage },
      ...(s.sources ? { sources: s.sources } : {}),
    };
  }

}
