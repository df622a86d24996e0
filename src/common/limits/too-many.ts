import { HttpException } from '@nestjs/common';
import type { Response } from 'express';

/**
 * A 429 that says which limit was hit and when to retry: `Retry-After` (seconds) on the answer
 * and `{error: 'too_many_requests', limit: <the setting>, max, retryAfter}` in the body.
 */
export function tooMany(res: Response, limit: string, max: number, retryAfterS: number, what: string): HttpException {
  const retryAfter = Math.max(1, Math.ceil(retryAfterS));
  res.setHeader('Retry-After', String(retryAfter));
  return new HttpException({ statusCode: 429, error: 'too_many_requests', limit, max, retryAfter, message: `${what}: ${limit}=${max}; retry after ${retryAfter} s` }, 429);
}
