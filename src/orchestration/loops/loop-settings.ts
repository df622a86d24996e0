import { DEFAULT_CONTENT_LOOP, type ContentLoopSettings } from './content-loop';

/**
 * The detector's thresholds from the one setting operators see, LOOP_CONTENT_REPEATS: the copies
 * that stop a response in prose. The spans, and the thresholds inside code blocks and tables
 * (where logs and data repeat lines legitimately, so the span decides), stay the corpus's
 * defaults. 0 turns detection off.
 */
export function contentLoopSettings(repeats: number): ContentLoopSettings {
  if (repeats === DEFAULT_CONTENT_LOOP.repeats) return DEFAULT_CONTENT_LOOP;
  return { ...DEFAULT_CONTENT_LOOP, repeats };
}
