import { CanActivate, ExecutionContext, ForbiddenException, Inject, Injectable, Optional, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Request } from 'express';
import { AppConfigService } from '../../config/app-config.service';
import { IS_PUBLIC, QUERY_TOKEN } from './public.decorator';
import { ADMIN_ONLY } from './admin-only.decorator';
import { KEY_RESOLVER, LOCAL_PRINCIPAL, setPrincipal, type KeyResolver, type Principal } from './principal';

/**
 * Default-deny: every route needs a key unless its metadata says `@Public()`. Decided by the
 * route the router matched, never by the path string, so no spelling of a path can skip it.
 * Keys: API_KEYS (admin keys, every project) and the database keys of the keys module. With no
 * key configured anywhere the service is in single-user local mode and every request acts as
 * the local admin. Env keys are compared in constant time (hashes of equal length).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly envKeys: Buffer[];

  constructor(
    config: AppConfigService,
    private readonly reflector: Reflector,
    @Optional() @Inject(KEY_RESOLVER) private readonly resolver?: KeyResolver,
  ) {
    this.envKeys = config.list('API_KEYS').map((k) => digest(k));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<Request>();
    const principal = await this.authenticate(req, this.reflector.get<boolean>(QUERY_TOKEN, context.getHandler()) === true);
    if (this.reflector.getAllAndOverride<boolean>(ADMIN_ONLY, targets) && principal.role !== 'admin') {
      throw new ForbiddenException('This route needs an admin key');
    }
    setPrincipal(req, principal);
    return true;
  }

  private async authenticate(req: Request, queryTokenAllowed: boolean): Promise<Principal> {
    const keyed = this.envKeys.length > 0 || ((await this.resolver?.anyKeys()) ?? false);
    if (!keyed) return LOCAL_PRINCIPAL;
    const m = /^Bearer\s+(.+)$/i.exec((req.headers.authorization ?? '').trim());
    const query = typeof req.query.access_token === 'string' ? req.query.access_token : undefined;
    const token = m?.[1] ?? (queryTokenAllowed ? query : undefined);
    if (token) {
      const d = digest(token);
      if (this.envKeys.some((k) => timingSafeEqual(k, d))) return { keyId: `env:${d.subarray(0, 4).toString('hex')}`, name: 'API_KEYS', projects: '*', role: 'admin' };
      const p = await this.resolver?.resolve(token);
      if (p) return p;
    }
    const hint = query && !queryTokenAllowed ? ' (?access_token= is accepted only on GET stream routes)' : '';
    throw new UnauthorizedException({ statusCode: 401, error: 'Unauthorized', message: `Missing or invalid API key: send Authorization: Bearer <key>${hint}` });
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
