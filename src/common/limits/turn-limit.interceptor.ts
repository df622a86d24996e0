import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../../config/app-config.service';
import { principalOf } from '../auth/principal';
import { tooMany } from './too-many';

export const STARTS_TURN = 'orion:startsTurn';
/** The route starts a model turn: it counts against the concurrent-turn limits. */
export const StartsTurn = (): MethodDecorator => SetMetadata(STARTS_TURN, true);

/** Turns usually end within seconds; a client told to wait longer would just give up. */
const RETRY_AFTER_S = 2;

/**
 * Concurrent running turns, checked before the stream opens, so an answer over a limit is a
 * 429 with Retry-After, never a dropped stream: MAX_CONCURRENT_TURNS in this instance,
 * MAX_CONCURRENT_TURNS_PER_KEY (this instance's turns of the key; not in local mode) and
 * MAX_CONCURRENT_TURNS_PER_PROJECT, counted on the shared database (runs running under a live
 * lease) so it holds across instances. A slot is released when the response closes.
 */
@Injectable()
export class TurnLimitInterceptor implements NestInterceptor {
  private total = 0;
  private readonly perKey = new Map<string, number>();

  constructor(
    private readonly reflector: Reflector,
    private readonly config: AppConfigService,
    private readonly ds: DataSource,
  ) {}

  /**
   * Synchronous unless the per-project limit needs the database: an interceptor that returns a
   * promise delays Nest's handling of an @Sse route enough that the handler's own 404 surfaced
   * inside an already-opened stream on PostgreSQL.
   */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    if (context.getType() !== 'http' || !this.reflector.get<boolean>(STARTS_TURN, context.getHandler())) return next.handle();
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    const key = principalOf(req).keyId;
    const maxTotal = this.config.get('MAX_CONCURRENT_TURNS');
    if (this.total >= maxTotal) throw tooMany(res, 'MAX_CONCURRENT_TURNS', maxTotal, RETRY_AFTER_S, 'Too many turns running on this instance');
    const maxKey = this.config.get('MAX_CONCURRENT_TURNS_PER_KEY');
    if (key !== 'local' && (this.perKey.get(key) ?? 0) >= maxKey) throw tooMany(res, 'MAX_CONCURRENT_TURNS_PER_KEY', maxKey, RETRY_AFTER_S, 'Too many turns running for this key');
    const maxProject = this.config.get('MAX_CONCURRENT_TURNS_PER_PROJECT');
    if (maxProject === 0) return this.take(key, res, next);
    return this.checkProject(req, res, maxProject).then(() => this.take(key, res, next));
  }

  private async checkProject(req: Request, res: Response, maxProject: number): Promise<void> {
    const body = (req.body ?? {}) as { projectId?: unknown };
    const project = typeof body.projectId === 'string' ? body.projectId : 'default';
    const [{ n }] = (await this.ds.query(
      `SELECT count(*)::int AS n FROM runs WHERE project_id = $1 AND status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at > now())`,
      [project],
    )) as Array<{ n: number }>;
    if (n >= maxProject) throw tooMany(res, 'MAX_CONCURRENT_TURNS_PER_PROJECT', maxProject, RETRY_AFTER_S, `Too many turns running in project ${project}`);
  }

  private take(key: string, res: Response, next: CallHandler): Observable<unknown> {
    this.total++;
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
    let released = false;
    res.once('close', () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perKey.get(key) ?? 1) - 1;
      if (left > 0) this.perKey.set(key, left);
      else this.perKey.delete(key);
    });
    return next.handle();
  }
}
