import type { StreamLoop } from '../model-stream';
import { ContentLoopDetector, type ContentLoopSettings } from './content-loop';

/**
 * A content loop in a whole text and its reasoning (a response that was not streamed, such as
 * the tool-only decision), by the same detector and thresholds the streamed routes use.
 */
export function findContentLoop(text: string, reasoning: string, settings?: ContentLoopSettings): StreamLoop | undefined {
  if (settings && settings.repeats <= 0) return undefined;
  const inText = text ? once(text, settings) : null;
  if (inText) return { ...inText, in: 'text' };
  const inReasoning = reasoning ? once(reasoning, settings) : null;
  return inReasoning ? { ...inReasoning, in: 'reasoning' } : undefined;
}

function once(text: string, settings?: ContentLoopSettings) {
  const d = new ContentLoopDetector(settings);
  const found = d.push(text);
  d.release();
  return found;
}
