import type { Logger } from '@nestjs/common';
import { abortReason, deadline } from '../../common/util/abort.util';
import type { ToolDefinition, ToolExecutionContext, ToolProgress } from '../tool-definition';
import { errorMessage, type Execution } from './outcome';

/** The tool's own timeout when it sets one, else TOOL_TIMEOUT_MS. */
export function toolTimeoutMs(def: ToolDefinition, defaultTimeoutMs: number): number {
  return def.timeoutMs && def.timeoutMs > 0 ? def.timeoutMs : defaultTimeoutMs;
}

/**
 * Runs `execute` under the tool's timeout merged with the caller's signal (one `deadline()`);
 * a tool that ignores the signal is abandoned: the call answers when the deadline fires and
 * whatever the tool does later goes nowhere.
 */
export async function executeTool(
  def: ToolDefinition,
  args: Record<string, unknown>,
  ctx: ToolExecutionContext,
  timeoutMs: number,
  logger: Logger,
): Promise<Execution> {
  const parent = ctx?.signal;
  const limit = deadline(parent, timeoutMs, {
    reason: (cause) => {
      if (cause === 'aborted' && parent) return abortReason(parent);
      const e = new Error(`tool "${def.name}" timed out after ${timeoutMs} ms`);
      e.name = 'TimeoutError';
      return e;
    },
  });
  let settled = false;
  const progress = ctx?.progress;
  const toolCtx: ToolExecutionContext = {
    projectId: ctx?.projectId,
    requestId: ctx?.requestId,
    signal: limit.signal,
    progress: (p: ToolProgress) => {
      if (settled || !progress) return; // a late report from an abandoned tool goes nowhere
      try {
        progress(p);
      } catch (err) {
        logger.warn(`progress listener failed for ${def.name}: ${errorMessage(err)}`);
      }
    },
  };
  const running = new Promise<unknown>((resolve) => resolve(def.execute(args, toolCtx)));
  running.catch(() => undefined); // an abandoned tool may reject later
  try {
    return { kind: 'returned', value: await limit.race(running) };
  } catch (error) {
    return { kind: 'threw', error, timedOut: limit.timedOut, cancelled: !!parent?.aborted };
  } finally {
    settled = true;
    limit.dispose();
  }
}
