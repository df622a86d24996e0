import { Injectable } from '@nestjs/common';
import type { KnowledgeModuleInfo, RetrievalResult } from '../../../knowledge/knowledge-retriever.port';
import type { LlmCapabilities, LlmErrorInfo, LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import { ModelStream, type ModelStreamResult } from '../../model-stream';
import { addUsage, emptyUsage, TRUNCATED_NOTICE, type ProtocolEvent, type StopReason, type TurnUsage } from '../../protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../protocol-strategy';
import { PARAGRAPH_BREAK, temperatureFor } from '../prompts';
import { assembleMessages, splitConversation, unifiedBudget, type StepMessages, type UnifiedBudget } from './unified.budget';
import { buildAgentSystemPrompt, buildDirectSystemPrompt } from './unified.prompt';
import { SourcesCollector } from './unified.sources';
import { runToolStep, stepMessages, type ExecutedCall } from './unified.tool-step';
import { offeredTools, phaseEdge, shownArguments, traceLateDeltas, traceStep } from '../../protocol-steps.util';
import { ToolCallGuard } from '../../tool-call-guard';
import { FORCED_FINAL_FALLBACK } from '../two-stage/two-stage.messages';
import { withTimeout as limitTime } from '../../../common/util/abort.util';

/** The instruction of the final, tool-free model call, by why the loop stopped. */
const FINAL_ANSWER_INSTRUCTION = {
  max_iterations: 'The tool-call budget of this turn is used up. Do not call any tools. Write your final answer to the user now, using the tool results above.',
  duplicate_limit: 'Tool calls were repeated too often. Do not call any tools. Write your final answer to the user now, using the tool results above.',
} as const;

/** Why the loop stopped before the model answered by itself. */
type FinalReason = keyof typeof FINAL_ANSWER_INSTRUCTION;

/** How long the system prompt waits for the project's knowledge modules before going without them. */
export const MODULES_TIMEOUT_MS = 2_000;
/** Excerpts the direct path retrieves for the user prompt (issue #5, item 6). */
export const DIRECT_RETRIEVAL_TOP_K = 5;

/** How one model step ended (a typed outcome, so every caller handles each case). */
type StepOutcome = { kind: 'run_tools' } | { kind: 'final'; stopReason: StopReason; error?: LlmErrorInfo };

/** Mutable state of one turn. */
interface TurnState {
  phaseIndex: number;
  /** tool steps started so far: the cycleIndex of the envelope */
  cycleIndex: number;
  /** model calls made so far */
  modelSteps: number;
  usage: TurnUsage;
  steps: StepMessages[];
  executed: Map<string, ExecutedCall>;
  sources: SourcesCollector;
  /** loop strikes (ToolCallGuard): refused repeats, and rerun tools that returned the same result again */
  duplicateStrikes: number;
  /** some answer text was streamed: the next step's text starts after a paragraph break */
  wrote: boolean;
  /** the tools the latest model step was offered */
  lastOffered?: LlmToolSpec[];
}

/** Everything about the turn that is fixed once it starts. */
interface TurnSetup {
  budget: UnifiedBudget;
  /** the system prompt naming the tools one step offers (a large catalog offers a subset per step) */
  systemFor: (offered: LlmToolSpec[]) => string;
  history: LlmMessage[];
  user: LlmMessage | undefined;
  specs: LlmToolSpec[];
}

/**
 * The unified route (issue #5): the agentic orchestrator behind `POST /api/chat/messages`.
 *
 * **Mode.** Agentic when `ctx.flags.orchestratorEnabled !== false`, the adapter says the model
 * can call tools (`capabilities().toolCalling`) and at least one tool is available; otherwise
 * the direct path, silently (traced as `unified_mode`).
 *
 * **Agentic loop.** Each model step is an `action_phase` that streams the model with every
 * available tool (`toolChoice: auto`, `disableReasoning: true`). A response without calls is
 * the answer. A response with calls closes its action phase and opens a `tool_phase` that runs
 * all of them (see `runToolStep`: concurrently, bound 4, progress as it happens, repeats of
 * earlier calls refused as on two-stage, invalid calls answered with the schema); the assistant
 * message and one `tool` message per call (with its `tool_call_id`, in call order) join the
 * conversation before the next model call. After `budgets.maxIterations` model calls, a
 * response that still calls tools is the last one: its calls are NOT run and get no tool
 * messages (nor a `tool_calls` event), the text it streamed stands, `stopReason: max_iterations`.
 * The loop rule is two-stage's (the ToolCallGuard): each refused repeat, and each `rerun` result
 * that repeats, is a strike; after the step whose strikes reach `budgets.maxDuplicateAttempts`
 * one tool-free call writes the answer, `stopReason: duplicate_limit`.
 * `tool_calls` (arguments redacted) comes after an action phase's end edge, before its tool
 * phase opens, as in two-stage.
 *
 * **Numbering.** phaseIndex 1, 2, 3… one per phase; cycleIndex is the tool step in progress
 * (docs/API.md): 0 until the first tool phase, k in tool phase k and in the action phase after it
 * — that is, in an action phase, the number of completed tool steps.
 *
 * **Direct path.** One action phase: retrieval (`ctx.knowledge.retrieve(projectId, prompt,
 * 5)`), the `sources` event (BEFORE the answer streams, so a client can show the citations
 * while it reads), then one model call with no tools offered and the numbered excerpts with
 * their paths in the system prompt.
 *
 * **Sources.** Exactly one `sources` event per turn, also when empty. Agentic path: after the
 * final action phase's end edge, before any `error` and the `done` — so after every tool step.
 *
 * **Ending.** Exactly one `done`, last. Cancellation (checked at every boundary) ends with
 * `done{cancelled}`, never an error; a model failure yields `error` then `done{error}`.
 * Pause requests are not honoured here: the unified route has no checkpoint or resume route
 * (issue #4's pause/resume belongs to two-stage).
 */
@Injectable()
export class UnifiedStrategy implements ProtocolStrategy {
  readonly name = 'unified';
  // no checkpoint: pause requests are not honoured (see above)
  readonly capabilities = { pausePoints: false, resume: false, tools: true };

  async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
    const s: TurnState = { phaseIndex: 0, cycleIndex: 0, modelSteps: 0, usage: emptyUsage(), steps: [], executed: new Map(), sources: new SourcesCollector(), duplicateStrikes: 0, wrote: false };
    const caps = await capabilitiesOf(ctx);
    const budget = unifiedBudget(ctx.contextWindow ?? caps?.contextWindow);
    const enabled = ctx.flags?.orchestratorEnabled !== false;
    const specs = enabled && caps?.toolCalling ? await ctx.tools.specs().catch((): LlmToolSpec[] => []) : [];
    const agentic = specs.length > 0;
    traceStep(ctx, 'unified_mode', {
      mode: agentic ? 'agentic' : 'direct',
      reason: agentic ? 'tool_calling' : !enabled ? 'orchestrator_disabled' : !caps ? 'capabilities_unknown' : !caps.toolCalling ? 'model_cannot_call_tools' : 'no_tools_available',
      contextWindow: budget.window,
    });
    if (ctx.signal.aborted) return yield* this.finish(ctx, s, 'cancelled');
    if (!agentic) return yield* this.direct(ctx, s, budget);

    const modules = await modulesOf(ctx, specs);
    const { history, user } = splitConversation(ctx.messages, budget);
    const setup: TurnSetup = {
      budget,
      history,
      user,
      specs,
      systemFor: memoByNames((tools) => buildAgentSystemPrompt({ tools, modules, customInstructions: ctx.systemContext, maxTokens: budget.systemTokens })),
    };

    while (true) {
      if (ctx.signal.aborted) return yield* this.finish(ctx, s, 'cancelled');
      // the model's text streams straight from here to the consumer: one generator level (hot path)
      const stream = yield* this.startStep(ctx, s, setup);
      const res = yield* stream.step();
      const outcome = yield* this.endStep(ctx, s, res);
      if (outcome.kind === 'final' && outcome.stopReason === 'max_iterations') return yield* this.finalAnswer(ctx, s, setup, 'max_iterations');
      if (outcome.kind === 'final') return yield* this.finish(ctx, s, outcome.stopReason, outcome.error);

      const spent = yield* this.toolPhase(ctx, s, res, specs);
      if (ctx.signal.aborted) return yield* this.finish(ctx, s, 'cancelled');
      if (spent) return yield* this.finalAnswer(ctx, s, setup, 'duplicate_limit');
    }
  }

  /**
   * The loop stopped (maxIterations, or the loop-strike limit): one more model call, offered no
   * tools, writes the answer from what the tools returned — as two-stage's forced final answer.
   * `stopReason` still says why the loop stopped.
   */
  private async *finalAnswer(ctx: ProtocolExecutionContext, s: TurnState, t: TurnSetup, why: FinalReason): AsyncGenerator<ProtocolEvent, void, undefined> {
    if (ctx.signal.aborted) return yield* this.finish(ctx, s, 'cancelled');
    // the tool-free call keeps the last step's prompt, so it reads the tool results against the same guidance
    const system = `${t.systemFor(s.lastOffered ?? t.specs)}\n\n${FINAL_ANSWER_INSTRUCTION[why]}`;
    const stream = yield* this.startStep(ctx, s, { ...t, systemFor: () => system, specs: [] }, why);
    const res = yield* stream.step();
    addUsage(s.usage, res.usage);
    traceLateDeltas(ctx, s.phaseIndex, res);
    if (res.text.length > 0) s.wrote = true;
    if (!res.error && !ctx.signal.aborted && res.text.trim() === '') {
      // the model still wrote nothing: the user gets an answer all the same
      yield { type: 'chunk', content: s.wrote ? PARAGRAPH_BREAK + FORCED_FINAL_FALLBACK : FORCED_FINAL_FALLBACK };
    }
    traceStep(ctx, 'llm_response', { phaseIndex: s.phaseIndex, step: s.modelSteps, forced: why, finishReason: res.finishReason ?? null, textChars: res.text.length, usage: res.usage ?? null });
    if (res.error) traceStep(ctx, 'llm_error', { phaseIndex: s.phaseIndex, step: s.modelSteps, ...res.error });
    // stopReason keeps saying why the loop stopped; the notice says the answer was cut off
    if (!res.error && res.finishReason === 'length') yield TRUNCATED_NOTICE;
    yield* phaseEdge(ctx, 'end', 'action_phase', s.phaseIndex, s.cycleIndex, ctx.signal.aborted ? 'cancelled' : res.error ? 'error' : why);
    yield* this.finish(ctx, s, res.error ? 'error' : why, res.error);
  }

  /** Opens a model step: builds the request inside the context budget and starts the stream. */
  private *startStep(ctx: ProtocolExecutionContext, s: TurnState, t: TurnSetup, why?: FinalReason): Generator<ProtocolEvent, ModelStream, undefined> {
    const final = why !== undefined;
    s.phaseIndex += 1;
    s.modelSteps += 1;
    yield* phaseEdge(ctx, 'start', 'action_phase', s.phaseIndex, s.cycleIndex);
    const latest = [...s.steps].reverse().find((x) => x.assistant.content?.trim())?.assistant.content ?? undefined;
    const offered = final ? [] : offeredTools(ctx, t.specs, { index: s.modelSteps, calledThisTurn: [...s.executed.values()].map((e) => e.name), latestModelText: latest });
    if (!final) s.lastOffered = offered;
    const { messages, report } = assembleMessages({ system: t.systemFor(offered), history: t.history, user: t.user, steps: s.steps, specs: offered, budget: t.budget });
    traceStep(ctx, 'llm_request', {
      phase: 'action_phase',
      phaseIndex: s.phaseIndex,
      step: s.modelSteps,
      messages: messages.length,
      tools: offered.map((x) => x.name),
      toolChoice: final ? 'none' : 'auto',
      // which budget forced it, as two-stage traces it (metrics and spans read it)
      ...(final ? { forced: why } : {}),
      temperature: temperatureFor(ctx.mode),
      maxTokens: t.budget.maxResponseTokens,
      ...report,
    });
    return new ModelStream(
      ctx.llm,
      {
        messages,
        tools: final ? undefined : offered,
        toolChoice: final ? 'none' : 'auto',
        temperature: temperatureFor(ctx.mode),
        maxTokens: t.budget.maxResponseTokens,
        requestId: ctx.requestId,
        disableReasoning: true,
      },
      ctx.signal,
      { stopAtFirstCompleteCall: false, ignoreToolCalls: final, lead: s.wrote ? PARAGRAPH_BREAK : undefined },
    );
  }

  /** Closes a model step's action phase and decides: run its calls, or end the turn. */
  private *endStep(ctx: ProtocolExecutionContext, s: TurnState, res: ModelStreamResult): Generator<ProtocolEvent, StepOutcome, undefined> {
    addUsage(s.usage, res.usage);
    traceLateDeltas(ctx, s.phaseIndex, res);
    if (res.text.length > 0) s.wrote = true;
    const end = (reason: string) => phaseEdge(ctx, 'end', 'action_phase', s.phaseIndex, s.cycleIndex, reason);
    if (ctx.signal.aborted) {
      yield* end('cancelled');
      return { kind: 'final', stopReason: 'cancelled' };
    }
    const error = res.error;
    if (error) {
      traceStep(ctx, 'llm_error', { phaseIndex: s.phaseIndex, step: s.modelSteps, ...error });
      yield* end('error');
      return { kind: 'final', stopReason: 'error', error };
    }
    const callCount = res.calls.length + res.invalid.length;
    traceStep(ctx, 'llm_response', {
      phaseIndex: s.phaseIndex,
      step: s.modelSteps,
      finishReason: res.finishReason ?? null,
      textChars: res.text.length,
      reasoningChars: res.reasoningChars,
      toolCalls: res.calls.map((c) => ({ id: c.id, name: c.name })),
      invalidCalls: res.invalid.length,
      usage: res.usage ?? null,
    });
    if (callCount === 0) {
      if (res.finishReason === 'length') {
        yield TRUNCATED_NOTICE;
        yield* end('max_tokens');
        return { kind: 'final', stopReason: 'max_tokens' };
      }
      yield* end('final_answer');
      return { kind: 'final', stopReason: 'final_answer' };
    }
    if (s.modelSteps >= ctx.budgets.maxIterations) {
      // the last response stands; its calls are not run and get no tool messages
      traceStep(ctx, 'max_iterations_reached', { maxIterations: ctx.budgets.maxIterations, unrunCalls: res.calls.map((c) => c.name) });
      yield* end('max_iterations');
      return { kind: 'final', stopReason: 'max_iterations' };
    }
    yield* end('tool_calls');
    return { kind: 'run_tools' };
  }

  /** One tool step: every call of the response, then its messages join the conversation. True once the loop-strike limit is spent. */
  private async *toolPhase(ctx: ProtocolExecutionContext, s: TurnState, res: ModelStreamResult, specs: LlmToolSpec[]): AsyncGenerator<ProtocolEvent, boolean, undefined> {
    // like two-stage: the calls are shown where the model made them, before their tool phase opens
    if (res.calls.length > 0) yield { type: 'tool_calls', calls: res.calls.map((c) => ({ id: c.id, name: c.name, arguments: shownArguments(ctx, c) })) };
    s.phaseIndex += 1;
    s.cycleIndex += 1;
    const phaseIndex = s.phaseIndex;
    yield* phaseEdge(ctx, 'start', 'tool_phase', phaseIndex, s.cycleIndex);

    const outcomes = yield* runToolStep(ctx, { step: s.cycleIndex, phaseIndex }, res.calls, res.invalid, s.executed, specs, s);
    for (const o of outcomes) if (o.kind === 'ran' && o.result) s.sources.addToolResult(o.name, o.result);
    if (ctx.signal.aborted) {
      yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, 'cancelled');
      return false;
    }
    s.steps.push(stepMessages(res.text, res.calls, res.invalid, outcomes));
    // a refused repeat is no tool error: the call was not run, and the model was told why
    const allOk = outcomes.every((o) => o.kind === 'refused' || (o.kind !== 'invalid' && o.result && o.result.outcome === 'success' && !o.result.isError));
    yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, allOk ? 'success' : 'tool_errors');
    return new ToolCallGuard(ctx).spent(s);
  }

  /** The direct path: retrieval, sources, one tool-free answer with the excerpts in the system prompt. */
  private async *direct(ctx: ProtocolExecutionContext, s: TurnState, budget: UnifiedBudget): AsyncGenerator<ProtocolEvent, void, undefined> {
    s.phaseIndex = 1;
    s.modelSteps = 1;
    yield* phaseEdge(ctx, 'start', 'action_phase', 1, 0);
    const { history, user } = splitConversation(ctx.messages, budget);
    const retrieval = await retrieveFor(ctx, user?.content ?? '');
    if (retrieval) s.sources.addRetrieval(retrieval);
    yield s.sources.toEvent();
    if (ctx.signal.aborted) {
      yield* phaseEdge(ctx, 'end', 'action_phase', 1, 0, 'cancelled');
      return yield this.done(s, 'cancelled');
    }
    const system = buildDirectSystemPrompt({ retrieval, customInstructions: ctx.systemContext, maxTokens: budget.systemTokens });
    const { messages, report } = assembleMessages({ system, history, user, steps: [], specs: [], budget });
    traceStep(ctx, 'llm_request', {
      phase: 'action_phase',
      phaseIndex: 1,
      step: 1,
      messages: messages.length,
      tools: [],
      retrievedSources: retrieval?.sources.length ?? 0,
      temperature: temperatureFor(ctx.mode),
      maxTokens: budget.maxResponseTokens,
      ...report,
    });
    const stream = new ModelStream(
      ctx.llm,
      { messages, temperature: temperatureFor(ctx.mode), maxTokens: budget.maxResponseTokens, requestId: ctx.requestId, disableReasoning: true },
      ctx.signal,
      { ignoreToolCalls: true },
    );
    const outcome = yield* this.endStep(ctx, s, yield* stream.step());
    const stopReason = outcome.kind === 'final' ? outcome.stopReason : 'final_answer';
    if (outcome.kind === 'final' && outcome.error) yield this.errorEvent(outcome.error);
    yield this.done(s, stopReason);
  }

  /** Ends the agentic path: the turn's one `sources` event, then `error` (if any), then `done`. */
  private *finish(ctx: ProtocolExecutionContext, s: TurnState, stopReason: StopReason, error?: LlmErrorInfo): Generator<ProtocolEvent, void, undefined> {
    yield s.sources.toEvent();
    if (error && !ctx.signal.aborted) yield this.errorEvent(error);
    yield this.done(s, ctx.signal.aborted ? 'cancelled' : stopReason);
  }

  private errorEvent(e: LlmErrorInfo): ProtocolEvent {
    return { type: 'error', code: `llm_${e.code}`, message: e.message, retryable: e.retryable };
  }

  private done(s: TurnState, stopReason: StopReason): ProtocolEvent {
    // fullContent is what was streamed; the executor, which saw every chunk, fills it in
    return { type: 'done', fullContent: '', stopReason, usage: s.usage };
  }

}

/** The adapter's capabilities; undefined when it cannot tell (the turn then takes the direct path). */
async function capabilitiesOf(ctx: ProtocolExecutionContext): Promise<LlmCapabilities | undefined> {
  try {
    return await ctx.llm.capabilities();
  } catch {
    return undefined;
  }
}

/** Builds a step's system prompt once per distinct set of offered tools (steps often offer the same set). */
function memoByNames(build: (tools: LlmToolSpec[]) => string): (tools: LlmToolSpec[]) => string {
  let key: string | undefined;
  let text = '';
  return (tools) => {
    const k = tools.map((t) => t.name).join('\n');
    if (k !== key) {
      key = k;
      text = build(tools);
    }
    return text;
  };
}

/** The project's knowledge modules for the system prompt: only when rag_query is offered; never fails the turn. */
async function modulesOf(ctx: ProtocolExecutionContext, specs: LlmToolSpec[]): Promise<KnowledgeModuleInfo[]> {
  const knowledge = ctx.knowledge;
  if (!knowledge || !specs.some((t) => t.name === 'rag_query')) return [];
  const list = await withTimeout(Promise.resolve().then(() => knowledge.modules(ctx.projectId)), MODULES_TIMEOUT_MS);
  return Array.isArray(list) ? list.filter((m) => m && typeof m.name === 'string') : [];
}

/** The direct path's retrieval; undefined without a knowledge base or when it fails (the answer goes on without). */
async function retrieveFor(ctx: ProtocolExecutionContext, prompt: string): Promise<RetrievalResult | undefined> {
  if (!ctx.knowledge || !prompt.trim()) return undefined;
  try {
    const r = await ctx.knowledge.retrieve(ctx.projectId, prompt, DIRECT_RETRIEVAL_TOP_K, ctx.signal);
    return r && Array.isArray(r.sources) ? r : undefined;
  } catch (err) {
    ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type: 'knowledge_retrieval_failed', details: { message: err instanceof Error ? err.message : String(err) } });
    return undefined;
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return limitTime(p.catch(() => undefined), ms, undefined);
}
