/**
 * The stack floor of the load benchmark: the same turn as floor-relay.ts, written in the least
 * code on the stack Orion is built on. A NestJS app (Express platform) with one `@Sse()` POST
 * route returning an Observable; the `openai` SDK for the two model calls, on the transport
 * Orion gives it (src/llm/wire/model-fetch.ts, undici's `request`; STACK_FLOOR_FETCH=sdk uses
 * the SDK's own `fetch`), its stream read with the SDK's iterator; the `list_files` call as a
 * readdir.
 *
 * With a database it also keeps the promise Orion keeps, every event stored before it is sent,
 * in the least code: one row for the turn when it starts, the events of all streams grouped
 * into one multi-row INSERT per flush (one flush in flight; what arrives meanwhile goes in the
 * next), and one UPDATE when the turn ends. STACK_FLOOR_DATABASE_URL: PostgreSQL through `pg`'s
 * Pool (the driver under TypeORM). STACK_FLOOR_PGLITE_DIR: an embedded PGlite in that folder,
 * on this process's thread and with the settings Orion's embedded default uses
 * (PGLITE_PROFILE=small, the database created in a child process), so the two compare.
 *
 * No validation, guards, logging, metrics, traces, leases, budgets, redaction or run control,
 * and no more than a bench needs around failures: a failed turn sends an `error` it does not
 * store, and a client that leaves does not stop its model calls (the bench's clients read every
 * turn to its end). What this costs per turn against the relay is what the stack costs; what
 * Orion costs above it is Orion's own work. `GET /stats`: event-loop delay p99 since the last
 * call.
 */
import 'reflect-metadata';
import { readdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Body, Controller, Get, HttpCode, type MessageEvent, Module, Post, Sse } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import OpenAI from 'openai';
import { PGlite } from '@electric-sql/pglite';
import { Pool } from 'pg';
import { Observable } from 'rxjs';
import { initInChildProcess, pgliteTuning } from '../../src/database/data-source';
import { modelFetch } from '../../src/llm/wire/model-fetch';

const MODEL_URL = process.env.FLOOR_MODEL_URL ?? 'http://127.0.0.1:1/v1';
const WORKSPACE = process.env.FLOOR_WORKSPACE ?? '.';
const DATABASE_URL = process.env.STACK_FLOOR_DATABASE_URL;
const PGLITE_DIR = process.env.STACK_FLOOR_PGLITE_DIR;
const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();
const openai = new OpenAI({ baseURL: MODEL_URL, apiKey: 'bench-key', maxRetries: 0, ...(process.env.STACK_FLOOR_FETCH === 'sdk' ? {} : { fetch: modelFetch() }) });

/** What the turn needs of a database: pg's Pool and PGlite both answer this. */
interface Db {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[] }>;
  end(): Promise<void>;
}
let pool: Db | undefined;

type Row = { turn: number; seq: number; type: string; data: string; stored: () => void; failed: (err: unknown) => void };

/** Group commit: every pending event of every stream in one INSERT, one INSERT in flight. */
class EventStore {
  private pending: Row[] = [];
  private busy = false;
  /** a flush is due on the next turn of the event loop, so every event of this turn joins it */
  private scheduled = false;

  store(turn: number, seq: number, type: string, data: object): Promise<void> {
    if (!pool) return Promise.resolve();
    return new Promise((stored, failed) => {
      this.pending.push({ turn, seq, type, data: JSON.stringify(data), stored, failed });
      if (!this.busy && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    if (this.busy || this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    this.busy = true;
    pool!
      .query('INSERT INTO events (turn_id, seq, type, data) SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::jsonb[])', [rows.map((r) => r.turn), rows.map((r) => r.seq), rows.map((r) => r.type), rows.map((r) => r.data)])
      .then(
        () => rows.forEach((r) => r.stored()),
        (err: unknown) => rows.forEach((r) => r.failed(err)),
      )
      .finally(() => {
        this.busy = false;
        this.flush();
      });
  }
}
const events = new EventStore();

type ToolCall = { id: string; name: string; arguments: string };

@Controller()
class TurnController {
  @Get('stats')
  stats(): { eventLoopP99Ms: number } {
    const p99 = lag.percentile(99) / 1e6;
    lag.reset();
    return { eventLoopP99Ms: p99 };
  }

  @Post()
  @HttpCode(200)
  @Sse()
  turn(@Body() body: { content: string }): Observable<MessageEvent> {
    return new Observable<MessageEvent>((out) => {
      let seq = 0;
      let turnId = 0;
      // stored, then sent: in order, since each emit awaits its store
      const emit = async (type: string, data: object) => {
        await events.store(turnId, ++seq, type, data);
        out.next({ type, data });
      };
      const call = async (messages: OpenAI.ChatCompletionMessageParam[]): Promise<ToolCall | undefined> => {
        const stream = await openai.chat.completions.create({ model: 'fake', stream: true, messages });
        let tool: ToolCall | undefined;
        for await (const c of stream) {
          const delta = c.choices[0]?.delta;
          if (delta?.content) await emit('chunk', { content: delta.content });
          const t = delta?.tool_calls?.[0];
          if (t) tool = tool ? { ...tool, arguments: tool.arguments + (t.function?.arguments ?? '') } : { id: t.id!, name: t.function!.name!, arguments: t.function?.arguments ?? '' };
        }
        return tool;
      };
      (async () => {
        if (pool) turnId = (await pool.query<{ id: number }>("INSERT INTO turns (status) VALUES ('running') RETURNING id")).rows[0].id;
        await emit('start', {});
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: body.content }];
        const tool = await call(messages);
        if (tool) {
          const path = (JSON.parse(tool.arguments || '{}') as { path?: string }).path ?? '.';
          const output = (await readdir(`${WORKSPACE}/${path}`)).join('\n');
          messages.push({ role: 'assistant', content: null, tool_calls: [{ id: tool.id, type: 'function', function: { name: tool.name, arguments: tool.arguments } }] }, { role: 'tool', tool_call_id: tool.id, content: output });
          await call(messages);
        }
        await emit('done', { stopReason: 'final_answer' });
        if (pool) await pool.query("UPDATE turns SET status = 'done' WHERE id = $1", [turnId]);
        out.complete();
      })().catch((err: Error) => {
        out.next({ type: 'error', data: { message: err.message } });
        out.complete();
      });
    });
  }
}

@Module({ controllers: [TurnController] })
class StackFloorModule {}

async function main(): Promise<void> {
  if (DATABASE_URL && PGLITE_DIR) throw new Error('set STACK_FLOOR_DATABASE_URL or STACK_FLOOR_PGLITE_DIR, not both');
  if (DATABASE_URL) pool = new Pool({ connectionString: DATABASE_URL, max: 10 });
  if (PGLITE_DIR) {
    initInChildProcess(PGLITE_DIR);
    const db = await PGlite.create({ dataDir: PGLITE_DIR, ...pgliteTuning('small') });
    pool = { query: (text, params) => db.query(text, params), end: () => db.close() };
  }
  if (pool) {
    await pool.query('CREATE TABLE IF NOT EXISTS turns (id serial PRIMARY KEY, status text NOT NULL)');
    await pool.query('CREATE TABLE IF NOT EXISTS events (turn_id int NOT NULL, seq int NOT NULL, type text NOT NULL, data jsonb NOT NULL, PRIMARY KEY (turn_id, seq))');
  }
  const app = await NestFactory.create(StackFloorModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  process.send?.({ port: (app.getHttpServer().address() as AddressInfo).port });
  process.once('SIGTERM', () => void app.close().finally(() => pool?.end().finally(() => process.exit(0))));
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
