import { DEFAULT_MAX_LINE_LENGTH, lineTooLong } from './line-limit';

/**
 * Splits a byte stream into text lines (UTF-8) for Ollama's NDJSON, whatever the chunking: a
 * multi-byte character or a `\r\n` pair cut between two network chunks is put back together.
 * Accepts `\n`, `\r\n` and lone `\r` endings.
 *
 * Linear in its input: each chunk is scanned once and an unfinished line is kept as a list of
 * fragments joined only when its line break arrives (re-scanning a growing buffer on every chunk
 * made a long line quadratic). A line longer than `maxLineLength` characters throws; lines that
 * came complete before it in the same chunk are returned first and the next call throws.
 */
export class LineDecoder {
  private readonly decoder = new TextDecoder('utf-8');
  private pending: string[] = [];
  private pendingLength = 0;
  /** The last chunk ended in `\r`: a `\n` opening the next one belongs to that line break. */
  private afterCr = false;
  private failure: Error | undefined;

  constructor(private readonly maxLineLength = DEFAULT_MAX_LINE_LENGTH) {}

  /** Lines completed by these bytes (without their line ending). */
  push(bytes: Uint8Array | string): string[] {
    if (this.failure) throw this.failure;
    return this.split(typeof bytes === 'string' ? bytes : this.decoder.decode(bytes, { stream: true }));
  }

  /** The stream ended: the rest is the last line (if any). */
  end(): string[] {
    if (this.failure) throw this.failure;
    const lines = this.split(this.decoder.decode());
    if (this.pendingLength > 0) lines.push(this.take(''));
    return lines;
  }

  private split(text: string): string[] {
    const lines: string[] = [];
    let start = 0;
    if (this.afterCr && text.length > 0) {
      if (text.charCodeAt(0) === 0x0a) start = 1;
      this.afterCr = false;
    }
    for (let i = start; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch !== 0x0a && ch !== 0x0d) continue;
      if (this.pendingLength + i - start > this.maxLineLength) return this.fail(lines);
      lines.push(this.take(text.slice(start, i)));
      if (ch === 0x0d) {
        if (i + 1 === text.length) this.afterCr = true;
        else if (text.charCodeAt(i + 1) === 0x0a) i++;
      }
      start = i + 1;
    }
    if (start < text.length) {
      if (this.pendingLength + text.length - start > this.maxLineLength) return this.fail(lines);
      this.pending.push(start === 0 ? text : text.slice(start));
      this.pendingLength += text.length - start;
    }
    return lines;
  }

  private fail(lines: string[]): string[] {
    this.failure = lineTooLong(this.maxLineLength, 'a line');
    this.pending = [];
    this.pendingLength = 0;
    if (lines.length === 0) throw this.failure;
    return lines;
  }

  private take(tail: string): string {
    const line = this.pending.length === 0 ? tail : this.pending.join('') + tail;
    this.pending = [];
    this.pendingLength = 0;
    return line;
  }
}
