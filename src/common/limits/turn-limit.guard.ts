import { type CanActivate, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
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
 *
 * A guard, not an interceptor: an interceptor on an @Sse() route defers the handler, and Nest
 * then commits the stream's 200 headers before the handler's own 404/409 can answer.
 */
@Injectable()
export class TurnLimitGuard implements CanActivate {
  private total = 0;
  private readonly perKey = new Map<string, number>();

  constructor(
    private readonly reflector: Reflector,
    private readonly config: AppConfigService,
    private readonly ds: DataSource,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http' || !this.reflector.get<boolean>(STARTS_TURN, context.getHandler())) return true;
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    const key = principalOf(req).keyId;
    const maxTotal = this.config.get('MAX_CONCURRENT_TURNS');
    if (this.total >= maxTotal) throw tooMany(res, 'MAX_CONCURRENT_TURNS', maxTotal, RETRY_AFTER_S, 'Too many turns running on this instance');
    const maxKey = this.config.get('MAX_CONCURRENT_TURNS_PER_KEY');
    if (key !== 'local' && (this.perKey.get(key) ?? 0) >= maxKey) throw tooMany(res, 'MAX_CONCURRENT_TURNS_PER_KEY', maxKey, RETRY_AFTER_S, 'Too many turns running for this key');
    const maxProject = this.config.get('MAX_CONCURRENT_TURNS_PER_PROJECT');
    if (maxProject > 0) await this.checkProject(req, res, maxProject);
    this.take(key, res);
    return true;
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

  private take(key: string, res: Response): void {
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
  }
}
