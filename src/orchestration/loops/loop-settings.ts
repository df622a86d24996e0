import { DEFAULT_CONTENT_LOOP, type ContentLoopSettings } from './content-loop';

/**
 * The detector's thresholds from the one setting operators see, LOOP_CONTENT_REPEATS: copies in
 * prose; code blocks and tables need twice as many (logs and data repeat lines legitimately), and
 * the least spans stay the corpus's defaults. 0 turns detection off.
 */
export function contentLoopSettings(repeats: number): ContentLoopSettings {
  if (repeats === DEFAULT_CONTENT_LOOP.repeats) return DEFAULT_CONTENT_LOOP;
  return { ...DEFAULT_CONTENT_LOOP, repeats, codeRepeats: repeats * 2 };
}
