import { LineDecoder } from './line-decoder';

/** One Server-Sent Events message: its `event:` name (if any) and its `data:` lines joined by `\n`. */
export interface SseMessage {
  event?: string;
  data: string;
}

/**
 * A Server-Sent Events decoder (the WHATWG rules that matter for LLM streams): `data:` lines are
 * joined, `event:` names the message, comment lines (`: keep-alive`, `: OPENROUTER PROCESSING`)
 * and `id:`/`retry:` are dropped, a blank line dispatches. A last message without its blank
 * line is still delivered at the end, because some servers close right after it.
 */
export class SseDecoder {
  private readonly lines = new LineDecoder();
  private event: string | undefined;
  private data: string[] = [];

  /** Messages completed by these bytes. */
  push(bytes: Uint8Array | string): SseMessage[] {
    return this.consume(this.lines.push(bytes));
  }

  /** The stream ended: flushes a message that had no terminating blank line. */
  end(): SseMessage[] {
    const out = this.consume(this.lines.end());
    const last = this.dispatch();
    if (last) out.push(last);
    return out;
  }

  private consume(lines: string[]): SseMessage[] {
    const out: SseMessage[] = [];
    for (const line of lines) {
      if (line === '') {
        const msg = this.dispatch();
        if (msg) out.push(msg);
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.event = value;
    }
    return out;
  }

  private dispatch(): SseMessage | undefined {
    const msg = this.data.length > 0 ? { event: this.event, data: this.data.join('\n') } : undefined;
    this.event = undefined;
    this.data = [];
    return msg;
  }
}
