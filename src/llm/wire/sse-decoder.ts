import { createParser, type EventSourceParser, type ParseError } from 'eventsource-parser';
import { DEFAULT_MAX_LINE_LENGTH, lineTooLong } from './line-limit';

/** One Server-Sent Events message: its `event:` name (if any) and its `data:` lines joined by `\n`. */
export interface SseMessage {
  event?: string;
  data: string;
}

/**
 * The OpenAI-compatible stream decoder: UTF-8 bytes in, SSE messages out. Field parsing (data
 * lines joined, `event:`, comments such as `: keep-alive` or `: OPENROUTER PROCESSING`, `id:`,
 * `retry:`, BOM, every line-ending form) is eventsource-parser's, which is linear in its input
 * and bounds what it buffers (`maxBufferSize`: the unfinished line plus the data of the message
 * being built; past `maxLineLength` characters this throws).
 *
 * Kept here: streaming UTF-8 decoding (the parser takes strings), and delivering a last message
 * that lacks its blank line at the end, because some servers close right after it (the
 * specification would drop it).
 */
export class SseDecoder {
  private readonly decoder = new TextDecoder('utf-8');
  private readonly parser: EventSourceParser;
  private out: SseMessage[] = [];
  private failure: ParseError | string | undefined;

  constructor(private readonly maxLineLength = DEFAULT_MAX_LINE_LENGTH) {
    this.parser = createParser({
      onEvent: (e) => {
        // the parser bounds only what it buffers between chunks; a message that came whole in one chunk is checked here
        if (e.data.length > maxLineLength) this.failure ??= e.data;
        else if (!this.failure) this.out.push({ event: e.event, data: e.data });
      },
      // unknown fields and bad `retry:` values are ignored, as the specification says
      onError: (err) => {
        if (err.type === 'max-buffer-size-exceeded') this.failure ??= err;
      },
      maxBufferSize: maxLineLength,
    });
  }

  /** Messages completed by these bytes. */
  push(bytes: Uint8Array | string): SseMessage[] {
    return this.feed(typeof bytes === 'string' ? bytes : this.decoder.decode(bytes, { stream: true }));
  }

  /** The stream ended: flushes a message that had no terminating blank line. */
  end(): SseMessage[] {
    // the first line break ends an unfinished line, the second dispatches a pending message
    return this.feed(`${this.decoder.decode()}\n\n`);
  }

  /** Past the bound, messages completed earlier in the same chunk are returned first; the next call throws. */
  private feed(text: string): SseMessage[] {
    if (this.failure) throw lineTooLong(this.maxLineLength, 'a line or message');
    this.parser.feed(text);
    const out = this.out;
    this.out = [];
    if (this.failure && out.length === 0) throw lineTooLong(this.maxLineLength, 'a line or message');
    return out;
  }
}
