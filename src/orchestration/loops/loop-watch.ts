import type { StreamLoop } from '../model-stream';
import { ContentLoopDetector, type ContentLoopSettings } from './content-loop';

/**
 * The content-loop detectors of one model response, and the answer text they hold back: while a
 * passage repeats back to back past its shown copies the rest is held; it streams once the
 * passage stops repeating (or the response ends). When the repetition runs long enough to be a
 * loop, the held text is dropped and `loop` says where it was found: the caller stops the
 * response, so what streamed (up to the shown copies) is exactly what the answer holds.
 */
export class LoopWatch {
  private readonly text: ContentLoopDetector;
  /** most responses bring no reasoning: its detector is made when the first reasoning arrives */
  private reasoningDetector?: ContentLoopDetector;
  /** answer text taken but not handed out yet */
  private held = '';
  /** answer text handed out so far */
  private out = 0;
  loop?: StreamLoop;

  constructor(
    private readonly settings: ContentLoopSettings,
    /** `shown`: copies shown in place of the settings'; `lag`: characters always held back (the call after a loop) */
    private readonly after: { shown?: number; lag?: number } = {},
  ) {
    this.text = new ContentLoopDetector(settings);
    if (after.shown !== undefined) this.text.shown = after.shown;
  }

  /** Takes answer text; returns what may stream now ('' for nothing). */
  answer(text: string): string {
    const hit = this.text.push(text);
    this.held += text;
    if (hit) {
      const out = this.handOut(hit.shownEnd);
      this.held = '';
      this.loop = { ...hit, in: 'text' };
      return out;
    }
    return this.handOut(Math.min(this.text.holdFrom(), this.text.length - (this.after.lag ?? 0)));
  }

  /** Takes reasoning (never streamed): sets `loop` when it loops. */
  reasoning(text: string): void {
    const hit = (this.reasoningDetector ??= new ContentLoopDetector(this.settings)).push(text);
    if (hit) this.loop = { ...hit, in: 'reasoning' };
  }

  /** The response ended (or a call did) while a passage was repeating short of a loop: all of it streams. */
  releaseAll(): string {
    return this.held === '' ? '' : this.handOut(Infinity);
  }

  /** The response is over: the detectors' memory goes back to their pool for the next one. */
  dispose(): void {
    this.text.release();
    this.reasoningDetector?.release();
  }

  /** Held answer text up to offset `end` of the answer is handed out. */
  private handOut(end: number): string {
    const n = Math.min(end, this.out + this.held.length) - this.out;
    if (n <= 0) return '';
    const out = n === this.held.length ? this.held : this.held.slice(0, n);
    this.held = n === this.held.length ? '' : this.held.slice(n);
    this.out += n;
    return out;
  }
}
