import { Injectable } from '@nestjs/common';
import type { LlmMessage } from '../../../llm/llm-adapter.port';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../protocol-strategy';
import { parseTwoStageCheckpoint } from '../../run-state/run-checkpoint';
import { forcedFinal } from './two-stage.loop-budgets';
import { MAX_RESPONSE_TOKENS } from '../prompts';
import { budgetSpent, endAction, startAction, type ActionContext } from './two-stage.action-phase';
import { checkpoint, counters, done, initialState } from './two-stage.state';
import { continueCutCall } from './two-stage.cut-call';
import { continuePendingCall } from './two-stage.tool-phase';

/**
 * Two-stage triggered phases (issue #4): an action phase streams the model with the tools; the
 * first COMPLETE tool call ends it (upstream aborted; nothing of that response after the call —
 * later calls, text — is streamed or kept, see ModelStream); a tool phase runs exactly that call
 * and injects its result as a boxed system message after the system prompt. A call whose canonical signature already ran is refused, not run. Budgets —
 * executed tools (maxPhaseCycles) and loop strikes (maxDuplicateAttempts: refused repeats, repeated
 * results, calls that learned nothing new; the ToolCallGuard's) — force one
 * final model call that offers no tools. Every path ends in exactly one `done` (or `paused`).
 *
 * This file is the loop; the action phase (`two-stage.action-phase.ts`), the tool phase
 * (`two-stage.tool-phase.ts`), refused calls (`two-stage.refusals.ts`) and the turn's state and
 * checkpoint (`two-stage.state.ts`) have their own.
 */
@Injectable()
export class TwoStageStrategy implements ProtocolStrategy {
  readonly name = 'two-stage';
  readonly capabilities = { pausePoints: true, resume: true, tools: true };

  readCheckpoint(state: unknown): { baseMessages: LlmMessage[]; cutCallId?: string; checkpointsEachCall: true } {
    const c = parseTwoStageCheckpoint(state);
    // each call stores a checkpoint as it starts (runCall's `running`): a call after the latest one never ran
    return { baseMessages: c.baseMessages, ...(c.runningCall && { cutCallId: c.runningCall.call.id }), checkpointsEachCall: true };
  }

  async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
    const state = initialState(ctx);
    const specs = await ctx.tools.specs();
    const a: ActionContext = { forced: forcedFinal(counters(state), ctx.budgets), wrote: false, continuing: false, latestText: '', contentLoops: 0 };
    if (!ctx.resumeFrom) {
      // the turn's start, stored before the first model call (issue 44): an instance that
      // continues the run after this one died runs the first action phase again from it
      yield { type: 'checkpoint', phaseIndex: 0, state: checkpoint(state) as unknown as Record<string, unknown> };
    }
    if (state.pendingApproval || state.runningCall) {
      // the run stopped while its call waited for a person, or ran (its instance died): that tool phase goes on first
      const outcome = state.pendingApproval ? yield* continuePendingCall(ctx, state) : yield* continueCutCall(ctx, state);
      if (outcome.kind === 'final') return yield done(state, outcome.stopReason);
      if (outcome.kind === 'paused') return yield { type: 'paused', resumeFromPhaseIndex: outcome.resumeFromPhaseIndex };
      a.forced = forcedFinal(counters(state), ctx.budgets);
    }

    while (true) {
      if (ctx.signal.aborted) return yield done(state, 'cancelled');
      // the action phase's text streams from the model to the consumer (the hot path)
      const stream = yield* startAction(ctx, state, specs, a);
      if ('noRoom' in stream) {
        yield* budgetSpent(ctx, state, a, stream);
        return yield done(state, 'token_budget');
      }
      const stepText = (yield* stream.step()).text;
      if (stepText.length > 0) a.wrote = true;
      if (stepText.trim()) a.latestText = stepText;
      const outcome = yield* endAction(ctx, state, specs, a, stream);
      switch (outcome.kind) {
        case 'final':
          return yield done(state, outcome.stopReason);
        case 'paused':
          return yield { type: 'paused', resumeFromPhaseIndex: outcome.resumeFromPhaseIndex };
        case 'content_loop':
          // one tool-free call writes the answer once (the ToolCallGuard's graded answer)
          a.continuing = false;
          a.forced = 'content_loop';
          a.afterLoop = { instruction: outcome.instruction, said: outcome.said };
          break;
        case 'run_again':
        case 'refused_duplicate':
          a.continuing = outcome.kind === 'refused_duplicate';
          a.forced = forcedFinal(counters(state), ctx.budgets);
          break;
      }
    }
  }
}
