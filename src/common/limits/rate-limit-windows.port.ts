import type { InjectionToken } from '@nestjs/common';

/** A key's fixed window after a hit: the hits counted in it and the seconds until it ends. */
export interface RateLimitWindow {
  hits: number;
  leftSeconds: number;
}

/**
 * The shared table of rate-limit windows, so RATE_LIMIT_PER_MINUTE holds for a key across every
 * instance (DatabaseThrottlerStorage asks it). Implemented by the keys' module (admin).
 */
export interface RateLimitWindowsPort {
  /** Counts a hit of `key`; a window that ended starts again with this hit and lasts `ttlMs`. */
  hit(key: string, ttlMs: number): Promise<RateLimitWindow>;
}

export const RATE_LIMIT_WINDOWS: InjectionToken<RateLimitWindowsPort> = Symbol('RATE_LIMIT_WINDOWS');
