import { createHash } from 'node:crypto';
import { canonicalJson } from '../../common/util/canonical-json.util';
import type { ToolRunResult } from '../../tools/tool-definition';

/** Outcomes whose result came from the tool itself (not a refusal, a decline, a cancellation or a wait). */
const TOOL_ANSWERED = new Set<string>(['success', 'exception']);

/**
 * Digest of a result as the no-progress rule compares it: JSON in canonical key order, other text
 * with its white space folded. Undefined for a result that says nothing about its arguments — an
 * empty one (reading several empty files is progress: each says that file is empty), or one the
 * tool did not give (declined, cancelled, waiting).
 */
export function progressDigest(result: Pick<ToolRunResult, 'outcome' | 'outputText'>): string | undefined {
  if (!TOOL_ANSWERED.has(result.outcome)) return undefined;
  const normal = normaliseResult(result.outputText);
  if (normal === '' || normal === '""' || normal === '{}' || normal === '[]' || normal === 'null') return undefined;
  return createHash('sha256').update(normal).digest('hex');
}

function normaliseResult(text: string): string {
  const trimmed = text.trim();
  try {
    const parsed: unknown = JSON.parse(trimmed);
    if (typeof parsed === 'string') return parsed.replace(/\s+/g, ' ').trim();
    return canonicalJson(parsed);
  } catch {
    return trimmed.replace(/\s+/g, ' ');
  }
}
