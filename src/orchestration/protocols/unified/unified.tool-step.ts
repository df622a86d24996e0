import type { LlmMessage, LlmToolCall, LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { CompletedToolCall, InvalidToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { AsyncEventQueue } from './async-event-queue';
import { invalidName, resultDigest, ToolCallGuard, type ResultRecord } from '../../tool-call-guard';
import type { Strikes } from '../../loops/strikes';
import { progressDigest } from '../../loops/result-progress';
import { randomUUID } from 'node:crypto';
import { settleApprovals, type WaitingCall } from './unified.approvals';
import { awaitingStep, waitingAgain, type StepContinuation } from './unified.checkpoint';
import { runOne, waitsForPerson } from './unified.call';
import type { StepMessages } from './unified.context-budget';
import { cutOffContent, INVALID_CALL_NAME, invalidCallArguments, invalidCallContent, noProgressContent, refusedRepeatContent, toolMessageContent } from './unified.messages';

/**
 * How many calls of one step run at the same time. A model rarely emits more than a handful
 * of parallel calls; 4 keeps a burst (say 8 fetches) from opening 8 sockets and 8 file reads
 * at once while still overlapping the slow ones (issue #5 design notes: "bound 4").
 */
export const TOOL_CONCURRENCY = 4;

/** A call that ran in this turn: a later identical call is refused (or, a `rerun` tool's, compared with it). */
export interface ExecutedCall {
  callId: string;
  /** its signature digest; null when its arguments have none */
  digest: string | null;
  name: string;
  /** the tool step (cycleIndex) it ran in */
  step: number;
  /** the tool phase it ran in */
  phaseIndex: number;
  /** settles once the call has run (never rejects) */
  result: Promise<ToolRunResult>;
  /** sha256 of its result's text, once it ran (a checkpoint keeps it; a restored call has only this) */
  resultDigest?: string;
}

/** What one call of a step came to, in call order; `content` is its tool message. */
export interface CallOutcome {
  callId: string;
  name: string;
  /**
   * `duplicate`: the same call twice in one response, answered from the one run; `refused`: a
   * repeat of an earlier step's call; `ran` with `noProgress`: it ran and returned what the same
   * tool already gave under other arguments (the model reads that instead of the result);
   * `cut_off`: an instance that died had started it (issue 44), so it is not run again here
   */
  kind: 'ran' | 'duplicate' | 'refused' | 'invalid' | 'cut_off';
  noProgress?: boolean;
  content: string;
  result?: ToolRunResult;
  /** the call waited for a person and the turn was cancelled before a decision: the turn ends */
  interrupted?: boolean;
}

/** Where a tool step is in the turn: its number (cycleIndex) and its tool phase. */
export interface StepPosition {
  step: number;
  phaseIndex: number;
}

type Planned =
  | { kind: 'run'; index: number; call: CompletedToolCall; entry: ExecutedCall; settle: (r: ToolRunResult) => void; rerun?: { digest: string; previous: ExecutedCall } }
  | { kind: 'duplicate'; index: number; call: CompletedToolCall; digest: string; earlier: ExecutedCall }
  | { kind: 'refused'; index: number; call: CompletedToolCall; digest: string; earlier: ExecutedCall }
  | { kind: 'invalid'; index: number; bad: InvalidToolCall }
  | { kind: 'cut_off'; index: number; call: CompletedToolCall; entry: ExecutedCall };

/**
 * Runs every call of one model response (issue #5, item 1):
 * - valid calls run through `ctx.tools.run`, at most {@link TOOL_CONCURRENCY} at a time; each
 *   yields `tool_progress` calling → (its own `tool_phase` stages) → completed|failed AS IT
 *   HAPPENS: concurrent tools push into one queue that this generator drains;
 * - a call whose canonical signature already ran in an earlier step of this turn is refused by
 *   the ToolCallGuard as on two-stage (unless its tool's repeat policy is `rerun`): not run, a
 *   strike against `maxDuplicateAttempts`, traced as `duplicate_tool_call`, shown as a `refused`
 *   progress event and a `duplicate_tool_call` notice; its tool message says so and points at
 *   the earlier call, whose result the model already has (it is not sent again);
 * - the same call twice in one response runs once: the second is answered from that run (the
 *   model has not seen the result yet), traced and shown as a duplicate, not a strike;
 * - a `rerun` tool's repeat runs again; the same result as before is a strike (the guard's verdict);
 * - a new call whose result is what the same tool already returned under other arguments in an
 *   earlier step is no progress: a strike, and its tool message says so instead of the result;
 * - a call without a name or with arguments that are not a JSON object is never run: its tool
 *   message explains the schema (`refused` progress, `invalid_tool_arguments` notice);
 * - with `ctx.approvals`, a call the approval policy reserves for a person does not run: once
 *   the other calls have run, the step asks for each such call and waits for every decision
 *   (`settleApprovals`), so the model is not called again before the last one. Such a call shows
 *   `calling`, then nothing until it ran or was declined. Before it asks, the step's checkpoint
 *   with what ran and what waits is yielded (`go.asking`), so another instance can await the
 *   same approvals; a step continued from it (`go.awaiting`) runs none of the calls that ran.
 *
 * Strikes are counted on `s` (the turn's state), and the step's results join `s.results`; the caller stops the loop once the guard
 * says the budget is spent. Returns one outcome per call in call order (index order), so tool
 * messages follow the order of the calls whatever order the tools finished in.
 */
export async function* runToolStep(
  ctx: ProtocolExecutionContext,
  at: StepPosition,
  calls: CompletedToolCall[],
  invalid: InvalidToolCall[],
  specs: LlmToolSpec[],
  s: Strikes & { executed: Map<string, ExecutedCall>; results: ResultRecord[] },
  go: StepContinuation = {},
): AsyncGenerator<ProtocolEvent, CallOutcome[], undefined> {
  const cutOff = go.cutOff ?? new Set<string>();
  const strikes = s;
  const queue = new AsyncEventQueue<ProtocolEvent>();
  const guard = new ToolCallGuard(ctx);
  const planned = plan(guard, at, calls, invalid, s.executed, cutOff);
  // what the model had seen before this response: calls of one response never strike each other
  const seen = [...s.results];

  // refusals are known at once: shown (and counted) before anything runs
  for (const p of planned) {
    if (p.kind === 'refused') yield* guard.refuseRepeat(strikes, p.call, p.digest, p.earlier);
    if (p.kind === 'duplicate') yield* answerTwin(guard, p.call, p.digest, p.earlier);
    if (p.kind === 'invalid') yield* refuseInvalid(guard, p.bad);
    if (p.kind === 'cut_off') yield* answerCutOff(guard, p.call);
  }

  const runs = planned.filter((p): p is Extract<Planned, { kind: 'run' }> => p.kind === 'run');
  const waiting = new Map<Extract<Planned, { kind: 'run' }>, WaitingCall>();
  const ran = new Map<string, ToolRunResult>();
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const r = runs[next++];
      // continued after its instance died while the step waited: what ran is not run again
      const again = go.awaiting && waitingAgain(ctx, r.call, go.awaiting, go.exact ?? new Set());
      const result = again ? undefined : (go.awaiting?.ran.get(r.call.id) ?? (await runOne(ctx, r.call, queue)));
      // a call that waits for a person frees its slot: the decision may take minutes
      if (again) waiting.set(r, again);
      else if (waitsForPerson(ctx, result!)) waiting.set(r, { call: r.call, asked: result!, approvalId: randomUUID() });
      else {
        ran.set(r.call.id, result!);
        r.settle(result!);
      }
    }
  };
  const all = Promise.all(Array.from({ length: Math.min(TOOL_CONCURRENCY, runs.length) }, worker)).finally(() => queue.close());
  for await (const ev of queue) yield ev;
  await all;

  const interrupted = new Set<string>();
  if (waiting.size > 0 && ctx.approvals) {
    // asked in the model's order (`runs` is in call order), whatever order the runner answered in
    const asking = runs.filter((r) => waiting.has(r));
    // what a takeover continues from: stored before the first approval is (one not asked before included)
    if (go.asking && asking.some((r) => !go.awaiting?.asked.has(r.call.id))) yield go.asking(awaitingStep(ran, asking.map((r) => waiting.get(r)!), cutOff));
    const settled = yield* settleApprovals(ctx, ctx.approvals, asking.map((r) => waiting.get(r)!));
    asking.forEach((r, i) => {
      r.settle(settled[i].result);
      if (settled[i].interrupted) interrupted.add(r.call.id);
    });
  }

  const outcomes: CallOutcome[] = [];
  for (const p of planned) {
    switch (p.kind) {
      case 'run': {
        const result = await p.entry.result;
        p.entry.resultDigest = resultDigest(result.outputText);
        if (p.rerun) {
          // a call restored from a checkpoint (another instance ran it) has only its digest
          const before = p.rerun.previous.resultDigest ?? resultDigest((await p.rerun.previous.result).outputText);
          const sameResult = before === p.entry.resultDigest;
          yield* guard.rerunVerdict(strikes, p.call, p.rerun.digest, sameResult, { firstPhaseIndex: p.rerun.previous.phaseIndex, phaseIndex: at.phaseIndex });
        }
        const digest = p.entry.digest;
        const sameAs = p.rerun || interrupted.has(p.call.id) ? undefined : guard.noProgressOf(p.call.name, digest, result, seen);
        if (sameAs) yield* guard.noProgress(strikes, p.call, sameAs, at.phaseIndex);
        const progress = progressDigest(result);
        s.results.push({ name: p.call.name, signature: digest ?? `unsigned:${p.call.id}`, phaseIndex: at.phaseIndex, callId: p.call.id, ...(progress ? { progressDigest: progress } : {}) });
        outcomes.push({
          callId: p.call.id,
          name: p.call.name,
          kind: 'ran',
          result,
          content: sameAs ? noProgressContent(p.call.name, sameAs.callId, guard.noProgressText(p.call.name, `call ${sameAs.callId}`)) : toolMessageContent(p.call.name, result),
          ...(sameAs ? { noProgress: true } : {}),
          ...(interrupted.has(p.call.id) ? { interrupted: true } : {}),
        });
        break;
      }
      case 'duplicate': {
        const result = await p.earlier.result;
        outcomes.push({ callId: p.call.id, name: p.call.name, kind: 'duplicate', result, content: toolMessageContent(p.call.name, result, p.earlier.callId) });
        break;
      }
      case 'refused':
        outcomes.push({ callId: p.call.id, name: p.call.name, kind: 'refused', content: refusedRepeatContent(p.call.name, p.earlier.callId) });
        break;
      case 'cut_off': {
        const content = cutOffContent(p.call.name);
        p.entry.resultDigest = resultDigest(content);
        outcomes.push({ callId: p.call.id, name: p.call.name, kind: 'cut_off', content });
        break;
      }
      case 'invalid': {
        const schema = specs.find((s) => s.name === p.bad.name)?.parameters;
        outcomes.push({
          callId: p.bad.id,
          name: p.bad.name ?? INVALID_CALL_NAME,
          kind: 'invalid',
          content: invalidCallContent(p.bad, schema, specs.map((s) => s.name)),
        });
        break;
      }
    }
  }
  return outcomes;
}

/** The step as messages: the assistant message with every call (invalid ones included), then one tool message per call. */
export function stepMessages(text: string, calls: CompletedToolCall[], invalid: InvalidToolCall[], outcomes: CallOutcome[]): StepMessages {
  const byIndex = [
    ...calls.map((c) => ({ index: c.index, call: { id: c.id, name: c.name, arguments: c.arguments } as LlmToolCall })),
    ...invalid.map((b) => ({ index: b.index, call: { id: b.id, name: b.name ?? INVALID_CALL_NAME, arguments: invalidCallArguments(b) } as LlmToolCall })),
  ].sort((a, b) => a.index - b.index);
  return {
    assistant: { role: 'assistant', content: text || null, toolCalls: byIndex.map((x) => x.call) },
    tools: outcomes.map((o): LlmMessage => ({ role: 'tool', content: o.content, toolCallId: o.callId, name: o.name })),
  };
}

function plan(guard: ToolCallGuard, at: StepPosition, calls: CompletedToolCall[], invalid: InvalidToolCall[], executed: Map<string, ExecutedCall>, cutOff: ReadonlySet<string>): Planned[] {
  const out: Planned[] = [];
  for (const call of calls) {
    if (cutOff.has(call.id)) {
      // it may have run: kept as run, so the same call later is refused as a repeat, not run
      const digest = guard.classify(call, () => undefined, () => false).signature?.digest ?? null;
      const entry: ExecutedCall = { callId: call.id, digest, name: call.name, step: at.step, phaseIndex: at.phaseIndex, result: Promise.resolve(CUT_OFF_RESULT) };
      if (digest !== null) executed.set(digest, entry);
      out.push({ kind: 'cut_off', index: call.index, call, entry });
      continue;
    }
    // the guard classifies; the same call twice in one response is still one call (a twin)
    const verdict = guard.classify(call, (digest) => executed.get(digest), (earlier) => earlier.step === at.step);
    if (verdict.kind === 'twin') {
      out.push({ kind: 'duplicate', index: call.index, call, digest: verdict.signature.digest, earlier: verdict.earlier });
      continue;
    }
    if (verdict.kind === 'repeat') {
      out.push({ kind: 'refused', index: call.index, call, digest: verdict.signature.digest, earlier: verdict.earlier });
      continue;
    }
    const digest = verdict.signature?.digest ?? null;
    let settle!: (r: ToolRunResult) => void;
    const entry: ExecutedCall = { callId: call.id, digest, name: call.name, step: at.step, phaseIndex: at.phaseIndex, result: new Promise<ToolRunResult>((resolve) => (settle = resolve)) };
    if (digest !== null) executed.set(digest, entry);
    out.push({ kind: 'run', index: call.index, call, entry, settle, ...(verdict.kind === 'rerun' ? { rerun: { digest: verdict.signature.digest, previous: verdict.earlier } } : {}) });
  }
  for (const bad of invalid) out.push({ kind: 'invalid', index: bad.index, bad });
  return out.sort((a, b) => a.index - b.index);
}

/** The second of two identical calls in one response: answered from the first one's run, not a strike. */
function* answerTwin(guard: ToolCallGuard, call: CompletedToolCall, digest: string, twin: ExecutedCall): Generator<ProtocolEvent, void, undefined> {
  guard.traceDuplicate(call, digest, { policy: 'refuse', sameResult: null }, { firstPhaseIndex: twin.phaseIndex, firstCallId: twin.callId, answeredFromEarlierResult: true });
  yield guard.refused(call);
  yield {
    type: 'notice',
    code: 'duplicate_tool_call',
    message: `Duplicate tool call detected: ${call.name} with the same arguments twice in one response (call ${twin.callId}); it ran once and both calls get its result.`,
  };
}

/** A cut-off call's stand-in result: never read (a twin of it in the same step is answered from it, as cut off too). */
const CUT_OFF_RESULT = { toolName: '', args: {}, outcome: 'error', output: null, outputText: '', truncated: false, isError: true, latencyMs: 0 } as unknown as ToolRunResult;

/** A call that an instance which died had started: shown as not run here, with why (issue 44). */
function* answerCutOff(guard: ToolCallGuard, call: CompletedToolCall): Generator<ProtocolEvent, void, undefined> {
  yield guard.refused(call);
  yield {
    type: 'notice',
    code: 'tool_interrupted',
    message: `${call.name} was running when the instance running this turn stopped; it may or may not have run, and it was not run again. The model was told so.`,
  };
}

function* refuseInvalid(guard: ToolCallGuard, bad: InvalidToolCall): Generator<ProtocolEvent, void, undefined> {
  const name = invalidName(bad);
  guard.traceInvalid(bad);
  yield guard.refused(bad);
  yield { type: 'notice', code: 'invalid_tool_arguments', message: `The arguments of ${name} were not a JSON object (${bad.error}); the call was not run and the model was told the schema.` };
}
