import type { StreamLoop } from '../model-stream';
import type { ContentLoop } from './content-loop';

/** How a content loop is traced (`loop_detected`), on every route. */
export function contentLoopDetails(loop: StreamLoop): Record<string, unknown> {
  return { in: loop.in, period: loop.period, repeats: loop.repeats, shown: loop.in === 'text' ? shownCopies(loop) : 0, atChar: loop.atChar, endChar: loop.endChar, shownEnd: loop.in === 'text' ? loop.shownEnd : 0 };
}

/** Copies of the passage that reached the client. */
export function shownCopies(loop: Pick<ContentLoop, 'shownEnd' | 'atChar' | 'period'>): number {
  return Math.floor((loop.shownEnd - loop.atChar) / loop.period);
}
