/**
 * Splits a byte stream into text lines (UTF-8), whatever the chunking: a multi-byte character
 * or a `\r\n` pair cut between two network chunks is put back together. Accepts `\n`, `\r\n`
 * and lone `\r` endings, as the SSE specification requires.
 */
export class LineDecoder {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  /** how much of `buffer` is known to hold no line ending: a long line fed in small chunks is scanned once (linear) */
  private scanned = 0;

  /** Lines completed by these bytes (without their line ending). */
  push(bytes: Uint8Array | string): string[] {
    this.buffer += typeof bytes === 'string' ? bytes : this.decoder.decode(bytes, { stream: true });
    return this.drain(false);
  }

  /** The stream ended: the rest of the buffer is the last line (if any). */
  end(): string[] {
    this.buffer += this.decoder.decode();
    return this.drain(true);
  }

  private drain(final: boolean): string[] {
    const lines: string[] = [];
    let start = 0;
    let i = this.scanned;
    for (; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch === 0x0a) {
        lines.push(this.buffer.slice(start, i));
        start = i + 1;
      } else if (ch === 0x0d) {
        // A trailing `\r` may be the first half of `\r\n`: wait for the next chunk to know.
        if (i === this.buffer.length - 1 && !final) break;
        lines.push(this.buffer.slice(start, i));
        if (this.buffer.charCodeAt(i + 1) === 0x0a) i++;
        start = i + 1;
      }
    }
    this.buffer = this.buffer.slice(start);
    this.scanned = i - start;
    if (final && this.buffer.length > 0) {
      lines.push(this.buffer);
      this.buffer = '';
      this.scanned = 0;
    }
    return lines;
  }
}
