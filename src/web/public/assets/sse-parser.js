// Incremental Server-Sent Events parser (the WHATWG "event stream" rules), for streams read with
// fetch(): EventSource is GET-only and cannot send an Authorization header, so the chat page
// reads POST streams itself. Pure: no DOM, no network; unit-tested from Jest (src/web/*.spec.ts).

/**
 * @typedef {{ id: string | undefined, event: string, data: string }} SseMessage
 *   One dispatched message: `id` as sent on this message (undefined when it had none),
 *   `event` ("message" when unnamed) and `data` (its data lines joined by "\n").
 */

/**
 * Creates a parser. Feed it decoded text in any slicing (a line, an event or a CR/LF pair may be
 * split across pushes); it returns the messages completed by each push. Comment lines
 * (`: keep-alive`) and `retry:` are consumed; a block without data dispatches nothing.
 * @returns {{ push(text: string): SseMessage[], comments: number }}
 */
export function createSseParser() {
  let buffer = '';
  let started = false;
  /** @type {string[]} */
  let data = [];
  let event = '';
  /** @type {string | undefined} */
  let id;
  const parser = { push, comments: 0 };
  return parser;

  /** @param {string} text */
  function push(text) {
    buffer += text;
    if (!started && buffer.length > 0) {
      if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1); // a BOM at the start of the stream
      started = buffer.length > 0;
    }
    /** @type {SseMessage[]} */
    const out = [];
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer[i];
      if (c !== '\n' && c !== '\r') continue;
      // a CR at the very end may be the first half of a CRLF that the next push completes
      if (c === '\r' && i === buffer.length - 1) break;
      line(buffer.slice(start, i), out);
      if (c === '\r' && buffer[i + 1] === '\n') i++;
      start = i + 1;
    }
    buffer = buffer.slice(start);
    return out;
  }

  /** @param {string} text @param {SseMessage[]} out */
  function line(text, out) {
    if (text === '') {
      if (data.length > 0) out.push({ id, event: event || 'message', data: data.join('\n') });
      data = [];
      event = '';
      id = undefined;
      return;
    }
    if (text[0] === ':') {
      parser.comments++;
      return;
    }
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    // `retry` and unknown fields: ignored (the page runs its own reconnect policy)
  }
}
