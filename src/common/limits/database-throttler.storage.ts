import { Logger } from '@nestjs/common';
import { ThrottlerStorageService, type ThrottlerStorage } from '@nestjs/throttler';
import type { RateLimitWindowsPort } from './rate-limit-windows.port';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** How often a failing database is reported while the in-memory count stands in. */
const WARN_EVERY_MS = 60_000;

/**
 * @nestjs/throttler's storage on the shared database, so RATE_LIMIT_PER_MINUTE holds for a key
 * across every instance (the package's own storage counts per process). A fixed window per key:
 * the windows port counts the hit and opens a new window once the old one ended; a key over its
 * limit is blocked until its window ends. The package ships no SQL storage, hence this one.
 *
 * If the database cannot answer, the request is counted in this instance's memory instead: a
 * rate limit that fails open for a while beats one that turns every request into a 5xx.
 */
export class DatabaseThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  private readonly fallback = new ThrottlerStorageService();
  private warnedAt = 0;

  constructor(private readonly windows: RateLimitWindowsPort) {}

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    try {
      const { hits, leftSeconds } = await this.windows.hit(key, ttl);
      const left = Math.max(1, Math.ceil(leftSeconds));
      const blocked = Number(hits) > limit;
      return { totalHits: Number(hits), timeToExpire: left, isBlocked: blocked, timeToBlockExpire: blocked ? left : 0 };
    } catch (err) {
      if (Date.now() - this.warnedAt > WARN_EVERY_MS) {
        this.warnedAt = Date.now();
        this.logger.warn(`rate limit counted in memory: the database did not answer (${(err as Error).message})`);
      }
      return this.fallback.increment(key, ttl, limit, blockDuration, throttlerName);
    }
  }
}
