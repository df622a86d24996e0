import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { RateLimitWindow, RateLimitWindowsPort } from '../../common/limits/rate-limit-windows.port';

/**
 * The rate_limit_windows table (migration 1764250000000): RATE_LIMIT_PER_MINUTE's fixed windows,
 * one per key. Kept with the keys (this module manages them): a window counts one key's requests.
 */
@Injectable()
export class RateLimitWindowRepository implements RateLimitWindowsPort {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** One upsert counts the hit and opens a new window once the old one ended. */
  async hit(key: string, ttlMs: number): Promise<RateLimitWindow> {
    const rows = (await this.ds.query(
      `INSERT INTO rate_limit_windows AS w (key, hits, window_ends_at)
         VALUES ($1, 1, now() + make_interval(secs => $2::float8 / 1000))
         ON CONFLICT (key) DO UPDATE SET
           hits = CASE WHEN w.window_ends_at <= now() THEN 1 ELSE w.hits + 1 END,
           window_ends_at = CASE WHEN w.window_ends_at <= now() THEN EXCLUDED.window_ends_at ELSE w.window_ends_at END
         RETURNING hits, GREATEST(0, EXTRACT(EPOCH FROM (window_ends_at - now())))::float8 AS left_s`,
      [key.slice(0, 200), ttlMs],
    )) as Array<{ hits: number; left_s: number }>;
    return { hits: Number(rows[0].hits), leftSeconds: Number(rows[0].left_s) };
  }
}
