import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { openStreams } from '../common/sse/open-streams';
import { CountingLogger } from '../database/counting-logger';
import { StorageStats } from '../database/storage-stats';
import { TraceWriterService } from '../trace/trace-writer.service';

/** Seconds: a turn spans one quick answer to minutes of chained tools and retries. */
const TURN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320];
/** Seconds: one model call, or the wait for a stream's first chunk. */
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80];
const TOOL_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A pg Pool's counters (TypeORM's postgres driver keeps its pool as `driver.master`). */
interface PoolCounters {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * Orion's Prometheus metrics, in a registry of this app (not prom-client's global one, so two
 * apps in one process, as in the tests, do not share counters). The counters are moved by the
 * trace observer; gauges are read when scraped.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly turns = new Counter({ name: 'orion_turns_total', help: 'Turns ended, by protocol and stop reason', labelNames: ['protocol', 'stop_reason'], registers: [this.registry] });
  readonly turnDuration = new Histogram({ name: 'orion_turn_duration_seconds', help: 'From a turn starting (or resuming) to its end', labelNames: ['protocol', 'stop_reason'], buckets: TURN_BUCKETS, registers: [this.registry] });
  readonly modelCallDuration = new Histogram({ name: 'orion_model_call_duration_seconds', help: 'One model call, request to response or error', labelNames: ['provider', 'model', 'outcome'], buckets: MODEL_BUCKETS, registers: [this.registry] });
  readonly timeToFirstChunk = new Histogram({ name: 'orion_time_to_first_chunk_seconds', help: "From a turn starting to the model's first streamed chunk", labelNames: ['protocol'], buckets: MODEL_BUCKETS, registers: [this.registry] });
  readonly modelTokens = new Counter({ name: 'orion_model_tokens_total', help: 'Tokens the model reported, by kind', labelNames: ['provider', 'model', 'kind'], registers: [this.registry] });
  readonly projectTokens = new Counter({ name: 'orion_project_tokens_total', help: 'Tokens of ended turns, by project (estimates included)', labelNames: ['project'], registers: [this.registry] });
  readonly projectCost = new Counter({ name: 'orion_project_cost_total', help: 'Cost of ended turns from LLM_PRICES, by project', labelNames: ['project'], registers: [this.registry] });
  readonly toolExecutions = new Counter({ name: 'orion_tool_executions_total', help: 'Tool executions by tool and outcome', labelNames: ['tool', 'outcome'], registers: [this.registry] });
  readonly toolDuration = new Histogram({ name: 'orion_tool_duration_seconds', help: 'One tool execution', labelNames: ['tool'], buckets: TOOL_BUCKETS, registers: [this.registry] });
  readonly toolRefusals = new Counter({ name: 'orion_tool_refusals_total', help: 'Tool calls not run: duplicates, invalid arguments, refused by a mode', labelNames: ['tool', 'reason'], registers: [this.registry] });
  readonly loops = new Counter({ name: 'orion_loops_total', help: 'Loops the guard found: content (a passage repeated back to back), repeat (a repeated call or result), no_progress (a result the same tool already gave)', labelNames: ['kind', 'route'], registers: [this.registry] });
  readonly forcedFinals = new Counter({ name: 'orion_forced_finals_total', help: 'Final model calls forced by a budget (no tools offered)', labelNames: ['reason'], registers: [this.registry] });
  readonly llmRetries = new Counter({ name: 'orion_llm_retries_total', help: 'LLM requests retried before their first byte', labelNames: ['provider', 'reason'], registers: [this.registry] });
  readonly takenOver = new Counter({ name: 'orion_runs_taken_over_total', help: 'Runs whose instance died (or, on shutdown, let them go) taken over by this instance, by protocol (tool-only: a keyed execution continued by a retry) and outcome (continued; refused = a tool call was cut off; failed = could not continue)', labelNames: ['route', 'outcome'], registers: [this.registry] });
  readonly approvals = new Counter({ name: 'orion_approvals_total', help: 'Tool calls a person decided on, by decision (approve, deny, timeout = expired unanswered)', labelNames: ['decision'], registers: [this.registry] });
  readonly approvalsPending = new Gauge({ name: 'orion_approvals_pending', help: 'Approvals asked by runs executing on this instance and not yet decided, expired or voided', registers: [this.registry] });
  readonly rowsPurged = new Counter({ name: 'orion_rows_purged_total', help: 'Rows the storage worker removed by retention (on this instance), by table', labelNames: ['table'], registers: [this.registry] });
  readonly runsCompacted = new Counter({ name: 'orion_runs_compacted_total', help: 'Ended runs whose chunk events the storage worker folded into one per phase (on this instance)', registers: [this.registry] });

  constructor(traceWriter: TraceWriterService, dataSource: DataSource) {
    new Gauge({ name: 'orion_open_streams', help: 'Server-Sent Event streams open on this instance', registers: [this.registry], collect() { this.set(openStreams.count); } });
    new Gauge({ name: 'orion_trace_queue_events', help: 'Trace events waiting to be stored', registers: [this.registry], collect() { this.set(traceWriter.queued); } });
    this.totalOf('orion_trace_dropped_events_total', 'Trace events not stored (queue full, or their write failed)', () => traceWriter.droppedEvents);
    this.totalOf('orion_db_statements_total', 'Statements sent to the database through the data source (transaction control included; not LISTEN)', () =>
      dataSource.logger instanceof CountingLogger ? dataSource.logger.statements : 0,
    );
    new Gauge({
      name: 'orion_db_pool_connections',
      help: 'Database pool connections by state (total, idle, waiting = queries waiting for a connection)',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const pool = (dataSource.driver as unknown as { master?: Partial<PoolCounters> }).master;
        if (!pool || typeof pool.totalCount !== 'number') return;
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount ?? 0);
        this.set({ state: 'waiting' }, pool.waitingCount ?? 0);
      },
    });
    // sampled at scrape time, at most every 10 s (the statements read catalog sizes and one index entry per table)
    const storage = new StorageStats(dataSource);
    new Gauge({
      name: 'orion_db_table_bytes',
      help: 'Bytes a table takes in the database (heap, TOAST and indexes; partitions summed), sampled at most every 10 s',
      labelNames: ['table'],
      registers: [this.registry],
      async collect() {
        const s = await storage.sample().catch(() => undefined);
        for (const [table, bytes] of Object.entries(s?.bytes ?? {})) this.set({ table }, bytes);
      },
    });
    new Gauge({
      name: 'orion_db_oldest_row_age_seconds',
      help: 'Age of the oldest row of a table (runs, conversations: since their last write), sampled at most every 10 s; 0 when empty',
      labelNames: ['table'],
      registers: [this.registry],
      async collect() {
        const s = await storage.sample().catch(() => undefined);
        for (const [table, age] of Object.entries(s?.oldestAgeSeconds ?? {})) this.set({ table }, age);
      },
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** A counter that reports a running total kept elsewhere (read when scraped). */
  private totalOf(name: string, help: string, read: () => number): void {
    let reported = 0;
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        const now = read();
        this.inc(now - reported);
        reported = now;
      },
    });
  }
}
