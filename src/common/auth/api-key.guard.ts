import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Request } from 'express';
import { AppConfigService } from '../../config/app-config.service';

/** Routes under /api that never need a key: the health checks orchestrators probe. */
const PUBLIC_API = new Set(['/api/health', '/api/health/live', '/api/health/ready']);

/** Outside /api but guarded like it: the metrics reveal tool names, models and load. */
const GUARDED = new Set(['/metrics']);

/**
 * When API_KEYS is set, every /api/* route but the health checks, and /metrics, need
 * `Authorization: Bearer <key>`.
 * Keys are compared in constant time (hashes of equal length). The page, the debug panel and
 * Swagger stay public; they call the API with the key the user gives them.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly keys: Buffer[];

  constructor(config: AppConfigService) {
    this.keys = config.list('API_KEYS').map((k) => digest(k));
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.keys.length === 0 || context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<Request>();
    // Express matches routes case-insensitively and tolerates repeated slashes: compare the
    // path the way the router sees it, or `/API/…` would skip the check
    const path = req.path.toLowerCase().replace(/\/{2,}/g, '/').replace(/\/+$/, '');
    if (!(path === '/api' || path.startsWith('/api/') || GUARDED.has(path)) || PUBLIC_API.has(path)) return true;
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    // EventSource cannot send headers: the reconnect route also accepts ?access_token=
    const token = m?.[1] ?? (typeof req.query.access_token === 'string' ? req.query.access_token : undefined);
    if (token) {
      const d = digest(token);
      if (this.keys.some((k) => timingSafeEqual(k, d))) return true;
    }
    throw new UnauthorizedException({ statusCode: 401, error: 'Unauthorized', message: 'Missing or invalid API key: send Authorization: Bearer <key>' });
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
