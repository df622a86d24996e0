import type { ToolRunResult } from '../../../tools/tool-definition';
import { untrustedBlock } from '../../../common/util/untrusted-block';
import type { ExecutedToolRecord } from '../../run-state/run-checkpoint';
import type { ForcedReason } from './two-stage.loop-budgets';

/** The two-stage protocol's system prompt: one tool per step, results arrive as system messages. */
export const TWO_STAGE_SYSTEM_PROMPT = [
  'You are Orion, an assistant that can call tools to act on the user\'s project.',
  'Call at most one tool at a time. After each call its result is added to this conversation as a system message headed "[Tool result #N …]".',
  'Read the tool results above before calling anything: never call a tool again with the same arguments, its result is already here.',
  'When you have what you need, answer the user directly without calling tools.',
].join('\n');

/** Longest tool output quoted into a system message (the runner already capped the output). */
const MAX_QUOTED_CHARS = 60_000;

/** The boxed system message that carries a tool's result (or error) back to the model. */
export function toolResultMessage(n: number, name: string, args: string, r: ToolRunResult): string {
  const status =
    r.outcome === 'success' && !r.isError
      ? 'success'
      : r.outcome === 'interrupted'
        ? 'interrupted (it may or may not have run; it was not run again)'
        : `${r.outcome}${r.isError ? ' (the tool reported an error)' : ''}`;
  const body = r.outputText.length > MAX_QUOTED_CHARS ? `${r.outputText.slice(0, MAX_QUOTED_CHARS)}… [cut]` : r.outputText;
  return [
    `[Tool result #${n} — ${name} ${compact(args)} — ${status}${r.truncated ? ' — output truncated' : ''}]`,
    untrustedBlock(name, body),
    `[End of tool result #${n}]`,
  ].join('\n');
}

/** Tells the model a call was refused as a duplicate and where its earlier result is. */
export function refusalMessage(name: string, args: string, earlier: ExecutedToolRecord, resultNumber: number): string {
  return [
    `[Refused duplicate tool call — ${name} ${compact(args)}]`,
    `This exact call already ran in phase ${earlier.phaseIndex} (outcome: ${earlier.outcome}); it was NOT run again.`,
    `Its result is the "[Tool result #${resultNumber} …]" system message above. Use it, call a different tool, or answer the user now.`,
  ].join('\n');
}

/** Tells the model (once per tool) that its arguments were not a JSON object, with the schema. */
export function invalidArgumentsMessage(name: string, error: string, schema: Record<string, unknown> | undefined): string {
  return [
    `[Tool call not run — ${name}]`,
    `Its arguments could not be used: ${error}.`,
    schema ? `Arguments must be one JSON object matching this schema: ${JSON.stringify(schema)}` : `There is no tool named "${name}".`,
    'Repeating a call with unusable arguments counts as a duplicate.',
  ].join('\n');
}

/** The boxed system message of a call whose result repeats an earlier one: the guard's wording, in place of the result. */
export function noProgressMessage(n: number, name: string, args: string, text: string): string {
  return [`[Tool result #${n} — ${name} ${compact(args)} — no new information]`, text, `[End of tool result #${n}]`].join('\n');
}

/** Why each budget forced the final answer, as the model reads it (a content loop has the guard's own instruction). */
const FORCED_WHY: Record<Exclude<ForcedReason, 'content_loop'>, string> = {
  cycle_budget: 'The tool budget of this turn is used up.',
  duplicate_limit: 'Tool calls were repeated too often.',
  no_progress: 'Tool calls kept returning results that were already known.',
  token_budget: 'The token budget of this turn is nearly used up; keep the answer short.',
};

/** Appended to the last model call of a turn that hit a budget: answer now, no tools. */
export function forcedFinalInstruction(reason: Exclude<ForcedReason, 'content_loop'>): string {
  return `${FORCED_WHY[reason]} Do not call any tools. Write your final answer to the user now, using the tool results above.`;
}

function compact(args: string): string {
  const oneLine = args.replace(/\s+/g, ' ').trim();
  return oneLine.length > 300 ? `${oneLine.slice(0, 300)}…` : oneLine;
}

/** Streamed when the forced final model call still produced no text (it tried to call tools). */
export const FORCED_FINAL_FALLBACK = 'I could not finish this within the tool budget of this turn. The tool results so far are in the trace; please ask again, more narrowly.';
