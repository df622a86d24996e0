import type { InvalidToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolRunResult } from '../../../tools/tool-definition';

/**
 * Contents of the unified route's `tool` messages (issue #5, item 1). A successful call's
 * message is the runner's `outputText` as it is. Anything else is one JSON object the model
 * can read — Chat Completions has no `is_error` field on tool messages (Anthropic's API has),
 * so the flag travels in the content, where every provider passes it through:
 *
 * - a failed call: `{"is_error":true,"tool","outcome","hint","result":<outputText>}`;
 * - the same call twice in one response: `{"duplicate_of":<callId>,"note","result":<outputText>}`
 *   (plus `is_error` when that call failed);
 * - a refused repeat of an earlier step's call: `{"refused":"duplicate_call","tool","duplicate_of","note"}`,
 *   without the result: the model already has it in that call's tool message;
 * - unusable arguments: `{"is_error":true,"tool","error":"invalid_arguments","message","parameters"}`.
 *
 * `outputText` is always valid JSON (ToolRunner guarantees it), so splicing it in keeps the
 * JSON valid. The model gets it inside the untrusted-output block (assembleMessages wraps it).
 */

const ERROR_HINT = 'The call failed. Correct the arguments and call again, try another tool, or tell the user what went wrong.';

/** The tool message for one executed call (or for a repeat of it, with `duplicateOf`). */
export function toolMessageContent(name: string, r: ToolRunResult, duplicateOf?: string): string {
  const failed = r.outcome !== 'success' || r.isError;
  if (!failed && !duplicateOf) return r.outputText;
  const head: string[] = [];
  if (failed) head.push('"is_error":true');
  if (duplicateOf) {
    head.push(`"duplicate_of":${JSON.stringify(duplicateOf)}`);
    head.push(`"note":${JSON.stringify(`This exact call already ran in this turn (call ${duplicateOf}); it was not run again. Its result follows; do not repeat it.`)}`);
  }
  head.push(`"tool":${JSON.stringify(name)}`);
  if (failed) head.push(`"outcome":${JSON.stringify(r.outcome)}`, `"hint":${JSON.stringify(ERROR_HINT)}`);
  return `{${head.join(',')},"result":${r.outputText || 'null'}}`;
}

/**
 * The tool message of a refused repeat (two-stage's refusal in unified's format): the call was
 * not run and the earlier result is not sent again, so a looping model is not fed the same
 * result as if it were new.
 */
export function refusedRepeatContent(name: string, earlierCallId: string): string {
  return JSON.stringify({
    refused: 'duplicate_call',
    tool: name,
    duplicate_of: earlierCallId,
    note: `This exact call already ran in this turn (call ${earlierCallId}); it was NOT run again. Its result is the tool message of call ${earlierCallId} above. Use it, call a different tool, or answer the user now.`,
  });
}

/**
 * The tool message of a call that ran and returned what the same tool already returned under
 * other arguments: the guard's note in place of the result (the model has it in that call's message).
 */
/** The tool message of a call cut off by an instance's death (issue 44): it may or may not have run, and is not run again. */
export function cutOffContent(name: string): string {
  return JSON.stringify({
    interrupted: true,
    tool: name,
    note: 'This call was running when the service instance running it stopped. It may or may not have run, and it was NOT run again. Do not assume it succeeded or failed; tell the user if it matters, or check its effect with a read-only tool.',
  });
}

export function noProgressContent(name: string, sameAsCallId: string, note: string): string {
  return JSON.stringify({ no_new_information: true, tool: name, same_result_as: sameAsCallId, note });
}

/** The tool message answering a call that was never run: no name, or arguments that are not a JSON object. */
export function invalidCallContent(bad: InvalidToolCall, schema: Record<string, unknown> | undefined, toolNames: string[]): string {
  const name = bad.name ?? '';
  return JSON.stringify({
    is_error: true,
    tool: name || null,
    error: 'invalid_arguments',
    message: schema
      ? `The call was not run: ${bad.error}. Send the arguments as one JSON object matching "parameters".`
      : `The call was not run: ${name ? `there is no tool named "${name}"` : 'the call had no tool name'}. Available tools: ${toolNames.join(', ') || '(none)'}.`,
    ...(schema ? { parameters: schema } : {}),
  });
}

/** The name an invalid call carries in the assistant message (the wire needs one). */
export const INVALID_CALL_NAME = 'invalid_tool_call';

/**
 * Arguments of an invalid call as re-sent in the assistant message: a JSON object holding the
 * raw text. Some servers (vLLM) parse the arguments of earlier assistant calls and answer 400
 * on text that is not JSON, which would end the turn for a mistake the model can fix.
 */
export function invalidCallArguments(bad: InvalidToolCall): string {
  return JSON.stringify({ _unparsed_arguments: bad.rawArguments.slice(0, 2_000) });
}
