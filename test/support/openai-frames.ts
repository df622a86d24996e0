import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A hand-written OpenAI-compatible model's stream, frame by frame, for the tests that must cut
 * it at an exact point (a frame sent, the next never) where a scripted replay answers whole, and
 * the model served and named to Orion.
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

/** Serves `handle` (the model, and any page its tool calls fetch) on a free port of 127.0.0.1. */
export async function serveModel(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Orion's environment for the model on `port`: its chat completions, and fetch_page allowed to read its pages. */
export const modelEnv = (port: number) => ({
  LLM_PROVIDER: 'openai',
  LLM_BASE_URL: `http://127.0.0.1:${port}/v1`,
  LLM_MODEL: 'fault',
  FETCH_ALLOW_HOSTS: `127.0.0.1:${port}`,
});
