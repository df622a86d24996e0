/**
 * The floor of the load benchmark: the least code that does the same turn as Orion's chat
 * routes. Plain node:http, no database, no validation, no guards: for each POST it streams the
 * model (the same fake model, over HTTP), relays every text delta as its own SSE `chunk` event,
 * runs the one tool call (`list_files`: a readdir of the workspace), calls the model again with
 * the result and relays that answer, then `done`. `GET /stats` returns this process's
 * event-loop delay p99 since the last call (perf_hooks), the same thing Orion exposes through
 * prom-client.
 */
import { readdir } from 'node:fs/promises';
import { Agent, createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { SseReader } from '../../test/support/sse-reader';

const MODEL = new URL(process.env.FLOOR_MODEL_URL ?? 'http://127.0.0.1:1/v1');
const WORKSPACE = process.env.FLOOR_WORKSPACE ?? '.';
const agent = new Agent({ keepAlive: true });
const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();

type ToolCall = { id: string; name: string; arguments: string };
type Msg = Record<string, unknown>;

/** One model call: relays text deltas to `res`, returns the tool call if the model made one. */
function callModel(messages: Msg[], res: ServerResponse): Promise<ToolCall | undefined> {
  return new Promise((resolve, reject) => {
    const req = request({ host: MODEL.hostname, port: MODEL.port, path: `${MODEL.pathname}/chat/completions`, method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (up) => {
      const sse = new SseReader();
      let call: ToolCall | undefined;
      up.on('data', (c: Buffer) => {
        for (const { data: line } of sse.push(c)) {
          if (line === '[DONE]') continue;
          const delta = JSON.parse(line).choices?.[0]?.delta;
          if (delta?.content) res.write(`event: chunk\ndata: ${JSON.stringify({ content: delta.content })}\n\n`);
          const t = delta?.tool_calls?.[0];
          if (t) call = call ? { ...call, arguments: call.arguments + (t.function?.arguments ?? '') } : { id: t.id, name: t.function.name, arguments: t.function.arguments ?? '' };
        }
      });
      up.on('end', () => resolve(call));
      up.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'fake', stream: true, messages }));
  });
}

async function turn(content: string, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(`event: start\ndata: {}\n\n`);
  const messages: Msg[] = [{ role: 'user', content }];
  const call = await callModel(messages, res);
  if (call) {
    const path = (JSON.parse(call.arguments || '{}') as { path?: string }).path ?? '.';
    const output = (await readdir(`${WORKSPACE}/${path}`)).join('\n');
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] }, { role: 'tool', tool_call_id: call.id, content: output });
    await callModel(messages, res);
  }
  res.end(`event: done\ndata: {"stopReason":"final_answer"}\n\n`);
}

const server = createServer((req, res) => {
  if (req.url === '/stats') {
    const p99 = lag.percentile(99) / 1e6;
    lag.reset();
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ eventLoopP99Ms: p99 }));
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    turn((JSON.parse(body) as { content: string }).content, res).catch((err: Error) => res.end(`event: error\ndata: ${JSON.stringify({ message: err.message })}\n\n`));
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
