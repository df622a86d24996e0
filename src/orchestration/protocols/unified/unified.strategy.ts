import { Injectable } from '@nestjs/common';
import type { KnowledgeModuleInfo, RetrievalResult } from '../../../knowledge/knowledge-retriever.port';
import type { LlmCapabilities, LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import { SharedTexts } from '../../../common/util/shared-texts';
import { ModelStream } from '../../model-stream';
import { emptyUsage, type ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../protocol-strategy';
import { AFTER_LOOP, PARAGRAPH_BREAK, temperatureFor } from '../prompts';
import { assembleMessages, splitConversation, unifiedBudget, type UnifiedBudget } from './unified.context-budget';
import { finalAnswer } from './unified.final-answer';
import { buildAgentSystemPrompt, buildDirectSystemPrompt } from './unified.prompt';
import { SourcesCollector } from './unified.sources';
import { endStep, startStep } from './unified.step';
import { toolPhase } from './unified.tool-phase';
import { done, errorEvent, finish, type TurnSetup, type TurnState } from './unified.turn';
import { checkpointEvent, cutOffCalls, restoredState } from './unified.checkpoint';
import { parseUnifiedCheckpoint } from '../../run-state/unified-checkpoint';
import { phaseEdge, traceStep } from '../../protocol-steps.util';
import { ToolCallGuard } from '../../tool-call-guard';
import { withTimeout as limitTime } from '../../../common/util/abort.util';

/** How long the system prompt waits for the project's knowledge modules before going without them. */
export const MODULES_TIMEOUT_MS = 2_000;
/** Excerpts the direct path retrieves for the user prompt (issue #5, item 6). */
export const DIRECT_RETRIEVAL_TOP_K = 5;

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
 * conversation before the next model call. Calls that wait for a person's approval (with
 * `ctx.approvals`) are asked for once the step's other calls have run, and the model is called
 * again only after every decision (approved calls run, declined ones are answered as declined).
 * As it asks, the step stores a checkpoint with what ran and what waits (issue 44): a run whose
 * instance dies (or drains on SIGTERM) while it waits stays waiting, its approvals answerable on
 * any instance, and the instance that takes it over awaits the same approvals and runs none of
 * the calls that ran.
 * After `budgets.maxIterations` model calls, a response that still calls tools is the last one:
 * its calls are NOT run and get no tool messages (nor a `tool_calls` event); one tool-free call
 * then writes the answer after the text it streamed, `stopReason: max_iterations`.
 * The loop rule is two-stage's (the ToolCallGuard, `unified.loop-budgets.ts`): each refused
 * repeat, each `rerun` result that repeats, and each call that returned what the same tool
 * already gave under other arguments (no progress) is a strike; after the step whose strikes
 * reach `budgets.maxDuplicateAttempts` one tool-free call writes the answer, `stopReason:
 * duplicate_limit` (or `no_progress`, when that kind of strike spent the budget). A response that
 * repeats one passage back to back is stopped there (ModelStream's detector) and one tool-free
 * call writes the answer once; a second such loop ends the turn, `stopReason: content_loop`.
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
 * **Files.** Here: the choice of path, the agentic loop with its tool step, the direct path.
 * The model step is `unified.step.ts`, the forced final answer `unified.final-answer.ts`, the
 * turn's state and ending `unified.turn.ts`.
 *
 * **Ending.** Exactly one `done`, last. Cancellation (checked at every boundary) ends with
 * `done{cancelled}`, never an error; a model failure yields `error` then `done{error}`.
 * Pause requests are not honoured here: the unified route has no pause, resume or fork route
 * (issue #4's pause/resume belongs to two-stage).
 *
 * **Checkpoints** (issue 44, `unified.checkpoint.ts`). One at phase 0 before the first model
 * call; one at an action phase whose response asked for tools, after `tool_calls` and before
 * they run (it holds the response); one after each completed tool step, at its tool phase.
 * Another instance continues a turn whose instance died from its last one: the next model call,
 * the step's calls, or the turn again from phase 0. Of the calls the dead instance had started,
 * read-only ones (with arguments nothing masked) run again; the others are not run and their tool
 * message says they may or may not have run (`notice tool_interrupted`).
 */
@Injectable()
export class UnifiedStrategy implements ProtocolStrategy {
  readonly name = 'unified';
  // step checkpoints let another instance continue a turn whose instance died (issue 44); there
  // is still no pause point, so no pause, resume or fork route (see above)
  readonly capabilities = { pausePoints: false, resume: true, tools: true };

  readCheckpoint(state: unknown): { baseMessages: LlmMessage[]; answersStartedCalls: boolean; checkpointsEachCall: false } {
    const c = parseUnifiedCheckpoint(state);
    // from the checkpoint before a step's calls, the calls the dead instance had started are
    // answered here; a step's calls share that one checkpoint (none is stored as each starts)
    return { baseMessages: c.baseMessages, answersStartedCalls: c.pending !== undefined, checkpointsEachCall: false };
  }

  async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
    // a turn continued on another instance (issue 44) goes on from its last completed step
    const restored = ctx.resumeFrom ? restoredState(ctx, ctx.resumeFrom.state) : undefined;
    const s: TurnState = restored
      ? restored.state
      : { phaseIndex: 0, cycleIndex: 0, modelSteps: 0, usage: emptyUsage(), baseMessages: ctx.messages, steps: [], executed: new Map(), results: [], sources: new SourcesCollector(), duplicateStrikes: 0, contentLoops: 0, wrote: false };
    // past its first step the turn is agentic whatever the tools offer now (it ran some)
    const midTurn = s.phaseIndex > 0;
    const caps = await capabilitiesOf(ctx);
    const budget = unifiedBudget(ctx.contextWindow ?? caps?.contextWindow);
    const enabled = ctx.flags?.orchestratorEnabled !== false;
    const specs = (enabled && caps?.toolCalling) || midTurn ? await ctx.tools.specs().catch((): LlmToolSpec[] => []) : [];
    const agentic = specs.length > 0 || midTurn;
    traceStep(ctx, 'unified_mode', {
      mode: agentic ? 'agentic' : 'direct',
      reason: midTurn ? 'continued' : agentic ? 'tool_calling' : !enabled ? 'orchestrator_disabled' : !caps ? 'capabilities_unknown' : !caps.toolCalling ? 'model_cannot_call_tools' : 'no_tools_available',
      contextWindow: budget.window,
      ...(ctx.resumeFrom ? { resumedFromPhaseIndex: s.phaseIndex } : {}),
    });
    if (ctx.signal.aborted) return yield* finish(ctx, s, 'cancelled');
    // nothing has run yet: should the instance die before the first step completes, another
    // one starts the turn again from here (the model call is repeatable). A turn continued from
    // this checkpoint already has it.
    if (!ctx.resumeFrom) yield checkpointEvent(ctx, s, 0);
    if (!agentic) return yield* direct(ctx, s, budget);

    const modules = await modulesOf(ctx, specs);
    const { history, user } = splitConversation(ctx.messages, budget);
    const setup: TurnSetup = {
      budget,
      history,
      user,
      specs,
      systemFor: memoByNames((tools) => buildAgentSystemPrompt({ tools, modules, customInstructions: ctx.systemContext, maxTokens: budget.systemTokens })),
    };

    if (restored?.pending) {
      // the checkpoint was taken as the model asked for these calls: they run now (those the
      // dead instance had started, only when read-only; the others are answered as cut off).
      // One taken as the step asked a person: the same approvals are awaited, in the same phase
      const { pending, awaiting, snapshot } = restored;
      const next = yield* toolPhase(ctx, s, pending, specs, { cutOff: cutOffCalls(ctx, pending, awaiting), exact: pending.exact, snapshot, ...(awaiting && { awaiting }) });
      if (next === 'cancelled' || ctx.signal.aborted) return yield* finish(ctx, s, 'cancelled');
      if (next === 'spent') return yield* finalAnswer(ctx, s, setup, new ToolCallGuard(ctx).strikeStopReason(s));
    } else if (midTurn && new ToolCallGuard(ctx).spent(s)) {
      // the step the checkpoint follows spent the strike budget: the answer is written without tools, as it was to be
      return yield* finalAnswer(ctx, s, setup, new ToolCallGuard(ctx).strikeStopReason(s));
    }
    while (true) {
      if (ctx.signal.aborted) return yield* finish(ctx, s, 'cancelled');
      // the model's text streams straight from here to the consumer: one generator level (hot path)
      const stream = yield* startStep(ctx, s, setup);
      if (stream === 'token_budget' || 'noRoom' in stream) return yield* finalAnswer(ctx, s, setup, 'token_budget');
      const res = yield* stream.step();
      const outcome = yield* endStep(ctx, s, res);
      if (outcome.kind === 'content_loop') return yield* finalAnswer(ctx, s, setup, 'content_loop', outcome);
      if (outcome.kind === 'final' && outcome.stopReason === 'max_iterations') return yield* finalAnswer(ctx, s, setup, 'max_iterations');
      if (outcome.kind === 'final') return yield* finish(ctx, s, outcome.stopReason, outcome.error);

      const next = yield* toolPhase(ctx, s, res, specs);
      if (next === 'cancelled' || ctx.signal.aborted) return yield* finish(ctx, s, 'cancelled');
      if (next === 'spent') return yield* finalAnswer(ctx, s, setup, new ToolCallGuard(ctx).strikeStopReason(s));
    }
  }
}

/** The direct path: retrieval, sources, one tool-free answer with the excerpts in the system prompt. */
export async function* direct(ctx: ProtocolExecutionContext, s: TurnState, budget: UnifiedBudget): AsyncGenerator<ProtocolEvent, void, undefined> {
  s.phaseIndex = 1;
  s.modelSteps = 1;
  yield* phaseEdge(ctx, 'start', 'action_phase', 1, 0);
  const { history, user } = splitConversation(ctx.messages, budget);
  const retrieval = await retrieveFor(ctx, user?.content ?? '');
  if (retrieval) s.sources.addRetrieval(retrieval);
  yield s.sources.toEvent();
  if (ctx.signal.aborted) {
    yield* phaseEdge(ctx, 'end', 'action_phase', 1, 0, 'cancelled');
    return yield done(s, 'cancelled');
  }
  const system = buildDirectSystemPrompt({ retrieval, customInstructions: ctx.systemContext, maxTokens: budget.systemTokens });
  let afterLoop: { instruction: string; said: string } | undefined;
  while (true) {
    // after a content loop (the guard's graded answer): once more, reading what was said and why to write it once
    const steps = afterLoop?.said.trim() ? [{ assistant: { role: 'assistant' as const, content: afterLoop.said }, tools: [] }] : [];
    const { messages, report } = assembleMessages({ system: afterLoop ? `${system}\n\n${afterLoop.instruction}` : system, history, user, steps, specs: [], budget });
    traceStep(ctx, 'llm_request', {
      phase: 'action_phase',
      phaseIndex: s.phaseIndex,
      step: s.modelSteps,
      messages: messages.length,
      tools: [],
      retrievedSources: retrieval?.sources.length ?? 0,
      temperature: temperatureFor(ctx.mode),
      maxTokens: budget.maxResponseTokens,
      ...(afterLoop ? { forced: 'content_loop' } : {}),
      ...report,
    });
    const stream = new ModelStream(
      ctx.llm,
      { messages, temperature: temperatureFor(ctx.mode), maxTokens: budget.maxResponseTokens, requestId: ctx.requestId, disableReasoning: true },
      ctx.signal,
      { ignoreToolCalls: true, contentLoop: ctx.contentLoop, lead: s.wrote ? PARAGRAPH_BREAK : undefined, ...(afterLoop ? AFTER_LOOP : {}) },
    );
    const outcome = yield* endStep(ctx, s, yield* stream.step());
    if (outcome.kind === 'content_loop') {
      afterLoop = outcome;
      s.phaseIndex += 1;
      s.modelSteps += 1;
      yield* phaseEdge(ctx, 'start', 'action_phase', s.phaseIndex, 0);
      continue;
    }
    const stopReason = outcome.kind === 'final' ? outcome.stopReason : 'final_answer';
    if (outcome.kind === 'final' && outcome.error) yield errorEvent(outcome.error);
    // a tool-free answer written after a content loop still says why the turn needed it
    return yield done(s, afterLoop && stopReason === 'final_answer' ? 'content_loop' : stopReason);
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

/**
 * The agentic system prompts of recent turns, one copy each: every open stream's model request
 * holds its prompt while the answer streams, and turns of one project build the same one.
 */
const SYSTEM_PROMPTS = new SharedTexts(64);

/** Builds a step's system prompt once per distinct set of offered tools (steps often offer the same set). */
function memoByNames(build: (tools: LlmToolSpec[]) => string): (tools: LlmToolSpec[]) => string {
  let key: string | undefined;
  let text = '';
  return (tools) => {
    const k = tools.map((t) => t.name).join('\n');
    if (k !== key) {
      key = k;
      text = SYSTEM_PROMPTS.share(build(tools));
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
