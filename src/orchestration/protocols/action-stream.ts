import type { LlmMessage, LlmToolSpec } from '../../llm/llm-adapter.port';
import { ModelStream, type ModelStreamOptions } from '../model-stream';
import type { ProtocolExecutionContext } from '../protocol-strategy';
import { temperatureFor } from './prompts';

/**
 * The model call of an action phase, made the same way by both protocols: the offered tools
 * with `toolChoice: auto`, or none (`undefined`, a forced final answer) with `none`. The call
 * decides tools or answers, so it asks for no reasoning where the server can skip it.
 */
export function actionStream(
  ctx: ProtocolExecutionContext,
  messages: LlmMessage[],
  offered: LlmToolSpec[] | undefined,
  maxTokens: number,
  opts: ModelStreamOptions,
): ModelStream {
  return new ModelStream(
    ctx.llm,
    {
      messages,
      tools: offered,
      toolChoice: offered ? 'auto' : 'none',
      temperature: temperatureFor(ctx.mode),
      maxTokens,
      requestId: ctx.requestId,
      disableReasoning: true,
    },
    ctx.signal,
    opts,
  );
}
