import { createParser, type EventSourceParser } from 'eventsource-parser';

/** One Server-Sent Events message: its `event:` name (if any) and its `data:` lines joined by `\n`. */
export interface SseMessage {
  event?: string;
  data: string;
}

/**
 * Server-Sent Events from a model's byte stream, parsed by eventsource-parser (the WHATWG rules:
 * `data:` lines joined, `event:` names the message, comments such as `: keep-alive` and
 * `id:`/`retry:` dropped, a blank line dispatches; any chunking, `\r\n` cut between chunks).
 * What stays here: bytes to text (UTF-8 characters cut between chunks), and delivering a last
 * message that lacks its blank line, because some servers close right after it.
 */
export class SseDecoder {
  private readonly text = new TextDecoder('utf-8');
  private readonly parser: EventSourceParser;
  private out: SseMessage[] = [];

  constructor() {
    this.parser = createParser({
      onEvent: (m) => this.out.push({ event: m.event, data: m.data }),
      // a line that is not a field (a bare JSON error body) is not a message: ignored, as before
      onError: () => undefined,
    });
  }

  /** Messages completed by these bytes. */
  push(bytes: Uint8Array | string): SseMessage[] {
    this.parser.feed(typeof bytes === 'string' ? bytes : this.text.decode(bytes, { stream: true }));
    return this.take();
  }

  /** The stream ended: flushes a message that had no terminating blank line. */
  end(): SseMessage[] {
    // end the last line and add the blank line that dispatches its message (a no-op when the
    // stream already ended with one)
    this.parser.feed(this.text.decode() + '\n\n');
    this.parser.reset();
    return this.take();
  }

  private take(): SseMessage[] {
    const out = this.out;
    this.out = [];
    return out;
  }
}
