import fc from 'fast-check';

/**
 * The chat page's SSE parser (public/assets/sse-parser.js). The browser modules are plain
 * JavaScript served as they are; Jest's swc transform loads them as CommonJS.
 */
interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}
const { createSseParser } = require('./public/assets/sse-parser.js') as {
  createSseParser: () => { push(text: string): SseMessage[]; comments: number };
};

const parseAll = (chunks: string[]) => {
  const p = createSseParser();
  return { messages: chunks.flatMap((c) => p.push(c)), comments: p.comments };
};

describe('createSseParser', () => {
  const stream =
    'id: 1\nevent: start\ndata: {"seq":1,"protocol":"two-stage"}\n\n' +
    ': keep-alive\n\n' +
    'id: 2\nevent: chunk\ndata: {"seq":2,"content":"Hel"}\n\n' +
    'id: 3\nevent: chunk\ndata: {"seq":3,"content":"lo\\n"}\n\n';

  it("reads Orion's frames: id, event, data; comments are consumed", () => {
    const { messages, comments } = parseAll([stream]);
    expect(messages).toEqual([
      { id: '1', event: 'start', data: '{"seq":1,"protocol":"two-stage"}' },
      { id: '2', event: 'chunk', data: '{"seq":2,"content":"Hel"}' },
      { id: '3', event: 'chunk', data: '{"seq":3,"content":"lo\\n"}' },
    ]);
    expect(comments).toBe(1);
  });

  it('gives the same messages however the bytes are sliced', () => {
    const whole = parseAll([stream]).messages;
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }), (cuts) => {
        const at = [0, ...cuts.sort((a, b) => a - b), stream.length];
        const chunks = at.slice(1).map((end, i) => stream.slice(at[i], end));
        expect(parseAll(chunks).messages).toEqual(whole);
      }),
    );
  });

  it('accepts CRLF and CR line ends, also a CRLF split between two pushes', () => {
    expect(parseAll(['event: a\r\ndata: 1\r', '\n\r\n', 'data: 2\r\rdata: 3\n\n']).messages).toEqual([
      { id: undefined, event: 'a', data: '1' },
      { id: undefined, event: 'message', data: '2' },
      { id: undefined, event: 'message', data: '3' },
    ]);
  });

  it('joins data lines with \\n, keeps a value without the optional space, strips a leading BOM', () => {
    expect(parseAll(['\ufeffdata:a\ndata: b\ndata\n\n']).messages).toEqual([{ id: undefined, event: 'message', data: 'a\nb\n' }]);
  });

  it('dispatches nothing for a block without data or an unfinished block', () => {
    expect(parseAll(['event: ping\nid: 9\n\n', 'retry: 100\n\n', 'data: half']).messages).toEqual([]);
  });
});
