import { withTimeout } from '../../common/util/abort.util';
import type { ToolDefinition } from '../tool-definition';

/** An `isAvailable()` that does not answer within this is read as "unavailable". */
export const AVAILABILITY_TIMEOUT_MS = 5000;

/** `isAvailable()` answered true within AVAILABILITY_TIMEOUT_MS; a throw or a hang is "unavailable". */
export async function isToolAvailable(def: ToolDefinition): Promise<boolean> {
  try {
    const check = new Promise<unknown>((resolve) => resolve(def.isAvailable()));
    return !!(await withTimeout(check, AVAILABILITY_TIMEOUT_MS, false));
  } catch {
    return false;
  }
}

/** Registered tools whose `isAvailable()` answers true within AVAILABILITY_TIMEOUT_MS, in the order given. */
export async function availableTools(all: ToolDefinition[]): Promise<ToolDefinition[]> {
  const flags = await Promise.all(all.map((t) => isToolAvailable(t)));
  return all.filter((_, i) => flags[i]);
}

/** The tool's own word on why it is unavailable, if it has one (a throw counts as none). */
export function unavailableReason(def: ToolDefinition): string | undefined {
  try {
    return def.unavailableReason?.();
  } catch {
    return undefined;
  }
}
