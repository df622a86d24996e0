/**
 * What one streamed model response is asked to do (ModelStreamOptions) and what it tells once
 * it ended (ModelStreamResult): the vocabulary between a ModelStream and the protocols.
 */
import type { LateDeltas, LlmErrorInfo, LlmUsage } from '../llm/llm-adapter.port';
import type { CompletedToolCall, InvalidToolCall } from '../llm/tool-call-accumulator';
import type { ContentLoop, ContentLoopSettings } from './loops/content-loop';

/** A content loop the stream stopped at, and in which text it was found. */
export interface StreamLoop extends ContentLoop {
  /** `text`: the answer (what was streamed ends at `shownEnd`); `reasoning`: the model's reasoning, never streamed */
  in: 'text' | 'reasoning';
}

/** How one streamed model response ended. */
export interface ModelStreamResult {
  text: string;
  reasoningChars: number;
  /** complete calls, index order (only the first when stopping at the first complete call) */
  calls: CompletedToolCall[];
  /** calls whose arguments never became a JSON object, or that had no name */
  invalid: InvalidToolCall[];
  finishReason?: string;
  usage?: LlmUsage;
  /** set when the model or the transport failed (not when we stopped it) */
  error?: LlmErrorInfo;
  /** we aborted the upstream request because the first complete call was known */
  stoppedEarly: boolean;
  /**
   * deltas that came after the response's finish (the adapter's or this stream's count): never
   * streamed, stored or run; absent when none came. Protocols trace it as a notice.
   */
  ignoredAfterFinish?: LateDeltas;
  /**
   * the response repeated one passage back to back and was stopped there (upstream aborted): the
   * answer text ends where the detector fired, and the response's tool calls are not kept
   */
  loop?: StreamLoop;
}

export interface ModelStreamOptions {
  /**
   * two-stage: end the response at the first complete tool call and abort upstream. Nothing the
   * response sends after that call's first fragment is streamed or kept: text and reasoning that
   * arrive while a call is open are held until its boundary, dropped if it completed, released
   * if it turned out unusable (or the stream failed before it was known).
   */
  stopAtFirstCompleteCall?: boolean;
  /** forced final answers: tool-call fragments are dropped */
  ignoreToolCalls?: boolean;
  /**
   * streamed before this step's first answer text (only if it has any): the paragraph break
   * that keeps an earlier step's text ("Let me look first.") apart from this one's
   */
  lead?: string;
  /** the content-loop detector's thresholds (absent: the defaults; `repeats: 0`: off) */
  contentLoop?: ContentLoopSettings;
  /**
   * the call after a loop: copies of a repeating passage shown at most, in place of the
   * settings' (1), and the answer text always held back (characters) so that a repetition is
   * found before its second copy streams (a period is found within about four of its lengths);
   * all of it streams when the response ends
   */
  loopShown?: number;
  loopLag?: number;
}
