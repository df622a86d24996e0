import type { IncomingMessage } from 'node:http';

/**
 * A hand-written OpenAI-compatible model's stream, frame by frame, for the tests that must cut
 * it at an exact point (a frame sent, the next never) where a scripted replay answers whole.
 */

/** One `chat.completion.chunk` frame carrying `delta`. */
export const openAiFrame = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'f', object: 'chat.completion.chunk', created: 0, model: 'fault', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

export const DONE_FRAME = 'data: [DONE]\n\n';

/** A whole answer: the words with a space between them, then `stop`. */
export const answerFrames = (words: readonly string[]) =>
  words.map((w, i) => openAiFrame({ content: i === words.length - 1 ? w : `${w} ` })).join('') + openAiFrame({}, 'stop') + DONE_FRAME;

/** A whole response that calls one tool. */
export const toolCallFrames = (id: string, name: string, args: unknown) =>
  openAiFrame({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] }, 'tool_calls') + DONE_FRAME;

/** Calls `then` with the request's body once it has all arrived. */
export function onBody(req: IncomingMessage, then: (body: string) => void): void {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => then(body));
}
