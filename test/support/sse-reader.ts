import { createParser, type EventSourceParser } from 'eventsource-parser';

/** One SSE message as received: `event` defaults to `message` as in a browser; `data` is the joined `data:` lines, unparsed. */
export interface SseFrame {
  id?: string;
  event: string;
  data: string;
}

/**
 * The one SSE reader of the tests, benches and fault suites. Field parsing is eventsource-parser's,
 * the parser the service itself uses for model streams (src/llm/wire/sse-decoder.ts), so tests
 * read Orion's streams by the specification rather than by a pattern that happens to match them.
 * Bytes are decoded as a stream, so a character split across chunks arrives whole.
 */
export class SseReader {
  /** comment lines (`: keep-alive`), text after the colon, trimmed */
  readonly comments: string[] = [];
  private readonly decoder = new TextDecoder('utf-8');
  private readonly parser: EventSourceParser;
  private out: SseFrame[] = [];

  constructor() {
    this.parser = createParser({
      onEvent: (e) => this.out.push({ id: e.id, event: e.event ?? 'message', data: e.data }),
      onComment: (c) => this.comments.push(c.trim()),
    });
  }

  /** The messages these bytes complete. */
  push(chunk: string | Uint8Array): SseFrame[] {
    this.parser.feed(typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true }));
    const out = this.out;
    this.out = [];
    return out;
  }
}

/**
 * Reads a response body (a fetch `Response.body` or a Node `IncomingMessage`) message by message
 * until it ends; `onFrame` returning true stops reading there (the caller drops the connection).
 */
export async function readSseFrames(body: AsyncIterable<Uint8Array | string>, onFrame: (f: SseFrame) => boolean | void = () => undefined): Promise<SseFrame[]> {
  const reader = new SseReader();
  const seen: SseFrame[] = [];
  for await (const chunk of body) {
    for (const f of reader.push(chunk)) {
      seen.push(f);
      if (onFrame(f) === true) return seen;
    }
  }
  return seen;
}
