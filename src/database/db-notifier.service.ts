import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { DatabaseInfo } from './database-info';
import { jsonRows } from './json-rows';
import { preparedQuery } from './prepared-query';
import { TickBatcher } from '../common/util/tick-batcher';
import { sleep } from '../common/util/abort.util';

type Handler = (payload: string) => void;

/** Channel names are identifiers: keep them simple so they need no quoting. */
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * PostgreSQL LISTEN/NOTIFY for every instance sharing the database: run control (cancel,
 * pause) and "new run events" wake-ups reach whichever instance runs or follows a run.
 *
 * - PostgreSQL: one dedicated `pg` connection outside the TypeORM pool LISTENs (a pooled
 *   connection would be handed to other queries); it reconnects with back-off and re-LISTENs.
 * - PGlite: its own `listen()`, on the same single connection the data source uses; the code
 *   path above it is the same, in one process.
 * NOTIFY goes through the data source (`SELECT pg_notify(…)`) in both cases.
 */
interface Notification {
  channel: string;
  payload: string;
  resolve(): void;
}

@Injectable()
export class DbNotifierService implements OnApplicationShutdown {
  private readonly logger = new Logger('DbNotifier');
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly unlistens = new Map<string, () => Promise<void>>();
  private client: Client | null = null;
  private connecting: Promise<void> | null = null;
  private closed = false;
  /** at most 500 notifications per statement */
  private readonly outbox = new TickBatcher<Notification>((batch) => this.send(batch), (queue) => Math.min(queue.length, 500));

  constructor(
    private readonly ds: DataSource,
    private readonly db: DatabaseInfo,
    private readonly config: AppConfigService,
  ) {}

  /** Subscribes to a channel; returns the unsubscribe function. */
  async listen(channel: string, handler: Handler): Promise<() => void> {
    if (!CHANNEL.test(channel)) throw new Error(`invalid channel name ${channel}`);
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      await this.subscribe(channel);
    }
    set.add(handler);
    return () => set!.delete(handler);
  }

  /**
   * Sends a notification to every instance (this one included). Best effort: failures are logged.
   * The notifications asked for within one tick go out in one statement (one commit), with at
   * most one such statement in flight: under load, a NOTIFY per run per interval took pooled
   * connections (and commits) from the event writes.
   */
  notify(channel: string, payload: string): Promise<void> {
    return new Promise<void>((resolve) => this.outbox.add({ channel, payload, resolve }));
  }

  private async send(batch: Notification[]): Promise<void> {
    const seen = new Set<string>();
    const rows: string[][] = [];
    for (const n of batch) {
      const key = `${n.channel}\u0000${n.payload}`;
      if (seen.has(key)) continue;
      seen.add(key);
      rows.push([n.channel, n.payload]);
    }
    try {
      await preparedQuery(this.ds, 'SELECT pg_notify(e->>0, e->>1) FROM jsonb_array_elements($1::jsonb) AS e', [jsonRows(rows)]);
    } catch (err) {
      this.logger.warn(`NOTIFY ${[...new Set(batch.map((n) => n.channel))].join(', ')} failed: ${(err as Error).message}`);
    } finally {
      for (const n of batch) n.resolve();
    }
  }

  private dispatch(channel: string, payload: string): void {
    for (const h of this.handlers.get(channel) ?? []) {
      try {
        h(payload);
      } catch (err) {
        this.logger.error(`handler for ${channel} failed: ${(err as Error).message}`);
      }
    }
  }

  private async subscribe(channel: string): Promise<void> {
    const pglite = this.db.pglite;
    if (pglite) {
      const unlisten = await pglite.listen(channel, (payload) => this.dispatch(channel, payload));
      this.unlistens.set(channel, unlisten);
      return;
    }
    await this.ensureClient();
    await this.client?.query(`LISTEN ${channel}`);
  }

  /** The dedicated LISTEN connection (PostgreSQL only), re-established after errors. */
  private ensureClient(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= (async () => {
      const url = this.config.get('DATABASE_URL');
      let delay = 250;
      while (!this.closed) {
        const client = new Client({ connectionString: url });
        try {
          await client.connect();
          client.on('notification', (n) => this.dispatch(n.channel, n.payload ?? ''));
          client.on('error', (err) => {
            this.logger.warn(`LISTEN connection lost: ${err.message}; reconnecting`);
            this.client = null;
            void client.end().catch(() => undefined);
            void this.ensureClient().then(() => this.relisten());
          });
          this.client = client;
          return;
        } catch (err) {
          await client.end().catch(() => undefined);
          this.logger.warn(`LISTEN connection failed: ${(err as Error).message}; retrying in ${delay} ms`);
          await sleep(delay);
          delay = Math.min(delay * 2, 10_000);
        }
      }
    })().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async relisten(): Promise<void> {
    for (const channel of this.handlers.keys()) await this.client?.query(`LISTEN ${channel}`).catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    for (const unlisten of this.unlistens.values()) await unlisten().catch(() => undefined);
    this.unlistens.clear();
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }
}
