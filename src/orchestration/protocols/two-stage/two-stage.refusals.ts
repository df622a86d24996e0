import type { LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { CompletedToolCall, InvalidToolCall } from '../../../llm/tool-call-accumulator';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { shownArguments } from '../../protocol-steps.util';
import type { ExecutedToolRecord } from '../../run-state/run-checkpoint';
import { invalidName, ToolCallGuard } from '../../tool-call-guard';
import { NOTICES } from './two-stage.loop-budgets';
import { invalidArgumentsMessage, refusalMessage } from './two-stage.messages';
import type { TurnState } from './two-stage.state';

/** A call whose signature already ran: not run again; the model is told which run it repeats. */
export async function* refuseDuplicate(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  call: CompletedToolCall,
  earlier: ExecutedToolRecord,
): AsyncGenerator<ProtocolEvent, void, undefined> {
  yield* new ToolCallGuard(ctx).refuseRepeat(s, call, earlier.signature, earlier);
  s.injected.push({ role: 'system', content: refusalMessage(call.name, shownArguments(ctx, call), earlier, s.executed.indexOf(earlier) + 1) });
}

/** Arguments that never became a JSON object: told once with the schema; a repeat is a strike. */
export async function* handleInvalid(
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
  const spent = guard.strike(s, 'invalid');
  yield { type: 'notice', code: 'duplicate_tool_call', message: `Duplicate tool call detected: another tool call (${name}) whose arguments are not a JSON object.` };
  if (spent) yield guard.limitReached(s);
}
