/**
 * The load benchmark's model, run in its own process (its CPU is not the measured service's):
 * an OpenAI-compatible `POST /v1/chat/completions` that streams. Per turn:
 *   - a request with no tool result in it: 10 text deltas, then one `list_files` tool call in 3
 *     argument fragments, 20 ms apart, `finish_reason: tool_calls`;
 *   - a request that carries the tool's result (a `tool` message, or two-stage's system message
 *     headed "[Tool result #"): 90 text deltas (FAKE_MODEL_FINAL_DELTAS), 20 ms apart,
 *     `finish_reason: stop`.
 * Each text delta's content is its emit time (`performance.timeOrigin + performance.now()`, ms,
 * a wall clock every process on the machine shares) followed by a space, so a client can read
 * the per-chunk added latency back from what it receives.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const GAP_MS = Number(process.env.FAKE_MODEL_GAP_MS ?? 20);
const FIRST_TEXT = 10;
const FINAL_TEXT = Number(process.env.FAKE_MODEL_FINAL_DELTAS ?? 90);
const now = () => performance.timeOrigin + performance.now();

type Msg = { role: string; content?: unknown };
const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'fake', object: 'chat.completion.chunk', created: 0, model: 'fake', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = () =>
  `data: ${JSON.stringify({ id: 'fake', object: 'chat.completion.chunk', created: 0, model: 'fake', choices: [], usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 } })}\n\n`;

/** The frames of one response; functions so a text delta is stamped when it is written. */
function script(firstCall: boolean): Array<() => string> {
  const text = (n: number) => Array.from({ length: n }, () => () => chunk({ content: `${now().toFixed(3)} ` }));
  if (!firstCall) return [...text(FINAL_TEXT), () => chunk({}, 'stop') + usage() + 'data: [DONE]\n\n'];
  const args = ['{"path":', '"."', '}'];
  return [
    ...text(FIRST_TEXT),
    () => chunk({ tool_calls: [{ index: 0, id: `call_${Math.random().toString(36).slice(2, 10)}`, type: 'function', function: { name: 'list_files', arguments: '' } }] }),
    ...args.map((a) => () => chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] })),
    () => chunk({}, 'tool_calls') + usage() + 'data: [DONE]\n\n',
  ];
}

function stream(res: ServerResponse, frames: Array<() => string>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let i = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    res.write(frames[i++]());
    if (i === frames.length) {
      clearInterval(timer);
      res.end();
    }
  }, GAP_MS);
  res.on('close', () => clearInterval(timer));
}

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    if (req.method === 'GET' && req.url?.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake', object: 'model', created: 0, owned_by: 'bench' }] }));
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    let messages: Msg[] = [];
    try {
      messages = (JSON.parse(body) as { messages: Msg[] }).messages ?? [];
    } catch {
      res.writeHead(400).end();
      return;
    }
    // a tool result is in the conversation: a `tool` message (unified, floor) or the boxed system message (two-stage)
    const answered = messages.some((m) => m.role === 'tool' || (typeof m.content === 'string' && m.content.startsWith('[Tool result #')));
    stream(res, script(!answered));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
