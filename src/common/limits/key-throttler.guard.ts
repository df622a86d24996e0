import { type ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { IS_PUBLIC } from '../auth/public.decorator';
import { principalOf } from '../auth/principal';
import { tooMany } from './too-many';

/**
 * RATE_LIMIT_PER_MINUTE per key, with @nestjs/throttler, counted on the shared database by
 * DatabaseThrottlerStorage so the rate holds across instances. Runs after the ApiKeyGuard so the
 * tracker is the key, not the IP: clients behind one proxy do not share a budget. Public routes (page, probes) and local mode
 * (no key configured) are not limited, so orchestrators' probes never see a 429.
 */
@Injectable()
export class KeyThrottlerGuard extends ThrottlerGuard {
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    return principalOf(context.switchToHttp().getRequest<Request>()).keyId === 'local';
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return principalOf(req as unknown as Request).keyId;
  }

  protected override async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    throw tooMany(context.switchToHttp().getResponse<Response>(), 'RATE_LIMIT_PER_MINUTE', detail.limit, detail.timeToBlockExpire, 'Too many requests for this key');
  }
}
