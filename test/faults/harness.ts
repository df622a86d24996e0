/**
 * Pieces of the fault suite: a scripted OpenAI-compatible model server with hooks at the points
 * where the suite kills, real Orion processes (`node dist/main.js`), an SSE reader that keeps
 * every event a client received, and direct SQL to read what was stored.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAiFrame as chunk } from '../support/openai-frames';
import { scriptedDelay } from '../support/scripted-delay';
import { readSseFrames } from '../support/sse-reader';
import { waitFor } from '../support/wait-for';


export type ModelHook = 'request' | 'answer-chunk' | 'answer-end' | 'page';
export interface ModelScript {
  /** words of the final answer */
  words: string[];
  /** tool calls asked on the first model call: [name, arguments JSON] */
  calls: Array<[string, string]>;
  delayMs: number;
  /** raw text put into the first chunk (fuzz) */
  hostileText?: string;
  /** a request whose user text holds this marker gets one line of `longLine` characters and no line break */
  longLine?: { marker: string; length: number };
  /** how long GET /page (a page for fetch_page) takes to answer: a tool that is still running */
  pageDelayMs?: number;
  /** how long the first model call thinks before it sends its tool calls: a turn whose next checkpoint is that far off */
  callDelayMs?: number;
}

/** Scripted model: first call (no tool result yet) answers with tool calls, the next with words. */
export async function startModel(script: () => ModelScript, hook: (h: ModelHook, n: number) => void) {
  let requests = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const s = script();
      if (req.url?.startsWith('/page')) {
        hook('page', 0);
        await scriptedDelay(s.pageDelayMs ?? 0);
        return res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>page</title></head><body><p>a slow page</p></body></html>');
      }
      if (!req.url?.includes('chat/completions')) return res.writeHead(404).end();
      if (s.longLine && body.includes(s.longLine.marker)) {
        // a hostile model: one multi-MB line without a line break, sent in 64 KiB pieces
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const piece = 'x'.repeat(64 * 1024);
        for (let sent = 0; sent < s.longLine.length && !res.destroyed; sent += piece.length) {
          res.write(sent === 0 ? 'data: ' + piece : piece);
          await scriptedDelay(1);
        }
        return res.end();
      }
      const n = ++requests;
      const parsed = JSON.parse(body) as { messages: Array<{ role: string }>; tools?: unknown[] };
      hook('request', n);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const hasToolResult = parsed.messages.some((m) => m.role === 'tool');
      try {
        if (!hasToolResult && parsed.tools?.length && s.calls.length) {
          await scriptedDelay(s.callDelayMs ?? 0);
          if (res.destroyed) return;
          if (s.hostileText) res.write(chunk({ content: s.hostileText }));
          s.calls.forEach(([name, args], i) => res.write(chunk({ tool_calls: [{ index: i, id: `call_${n}_${i}`, type: 'function', function: { name, arguments: args } }] })));
          res.end(chunk({}, 'tool_calls') + 'data: [DONE]\n\n');
          return;
        }
        for (let i = 0; i < s.words.length; i++) {
          if (res.destroyed) return;
          res.write(chunk({ content: `${s.words[i]} ` }));
          hook('answer-chunk', i);
          await scriptedDelay(s.delayMs);
        }
        hook('answer-end', n);
        res.end(chunk({}, 'stop') + 'data: [DONE]\n\n');
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

export interface Instance {
  port: number;
  url: string;
  child: ChildProcess;
}

export async function startOrion(dist: string, port: number, env: Record<string, string>): Promise<Instance> {
  const cwd = mkdtempSync(join(tmpdir(), 'orion-fault-'));
  const child = spawn(process.execPath, [dist], { cwd, env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'error' }, stdio: ['ignore', 'ignore', 'ignore'] });
  // its working folder goes with it, however it ends
  child.once('exit', () => rmSync(cwd, { recursive: true, force: true }));
  const url = `http://127.0.0.1:${port}`;
  try {
    // a fetch that throws (not listening yet) counts as not yet
    await waitFor(async () => (await fetch(`${url}/api/health/live`)).ok, { timeoutMs: 60_000, intervalMs: 100, what: `Orion on ${port} to start` });
    return { port, url, child };
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export interface Received {
  id: number;
  event: string;
  data: Record<string, unknown>;
  /** the `data` line as sent, for byte-for-byte comparisons */
  raw: string;
}

/** POSTs and reads the SSE stream until it ends (or the connection dies); calls onEvent per event. */
export async function readSse(url: string, body: unknown, onEvent: (e: Received) => void, method = 'POST'): Promise<{ status: number; events: Received[] }> {
  const events: Received[] = [];
  let status = 0;
  try {
    const res = await fetch(url, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? JSON.stringify(body) : undefined });
    status = res.status;
    if (!res.body) return { status, events };
    await readSseFrames(res.body as unknown as AsyncIterable<Uint8Array>, (f) => {
      // Orion names every event; an unnamed message is not one of its events
      if (f.event === 'message') return;
      const e = { id: Number(f.id), event: f.event, data: JSON.parse(f.data) as Record<string, unknown>, raw: f.data };
      events.push(e);
      onEvent(e);
    });
  } catch {
    /* the instance died: what was received is what counts */
  }
  return { status, events };
}
