import { type CanActivate, type ExecutionContext, HttpException, Inject, Injectable, type OnModuleDestroy, Optional, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { AppConfigService } from '../../config/app-config.service';
import { principalOf } from '../auth/principal';
import { PROJECT_OWNERSHIP, type ProjectOwnershipPort } from '../auth/project-ownership.port';
import { PROJECT_SCOPE, type ScopeSource } from '../auth/project-scope.decorator';
import { tooMany } from './too-many';
import { holdTurn } from './turn-hold';
import { TurnSlots } from './turn-slots';
import { TURN_SLOT_STORE, type TurnSlotStorePort } from './turn-slot-store.port';
import { UUID_PATTERN as UUID } from '../util/uuid';
import { Drain } from '../lifecycle/drain';

export const STARTS_TURN = 'orion:startsTurn';

/** A route that starts a turn for some of its requests only, in a project it names itself (the MCP and A2A endpoints). */
export interface StartsTurnOptions {
  /** whether this request starts a turn (absent: every request of the route does) */
  when?: (req: Request) => boolean;
  /** the project the turn runs in (absent: from the path, the body or the route's project scope) */
  project?: (req: Request) => string;
}

/** The route starts a model turn: it counts against the concurrent-turn limits. */
export const StartsTurn = (options: StartsTurnOptions = {}): MethodDecorator => SetMetadata(STARTS_TURN, options);


/** Turns usually end within seconds; a client told to wait longer would just give up. */
const RETRY_AFTER_S = 2;
/** A draining instance: the retry goes to another instance (through the load balancer) at once. */
const DRAINING_RETRY_AFTER_S = 1;

/**
 * Concurrent running turns, checked before the stream opens, so an answer over a limit is a
 * 429 with Retry-After, never a dropped stream: MAX_CONCURRENT_TURNS in this instance (memory),
 * MAX_CONCURRENT_TURNS_PER_KEY (not in local mode) and MAX_CONCURRENT_TURNS_PER_PROJECT across
 * every instance, as slots on the shared database (TurnSlots). A slot is released when the
 * response closes, or, for a detached run, when the run ends (turn-hold.ts). A resume or fork
 * counts against its run's project.
 *
 * A guard, not an interceptor: an interceptor on an @Sse() route defers the handler, and Nest
 * then commits the stream's 200 headers before the handler's own 404/409 can answer.
 */
@Injectable()
export class TurnLimitGuard implements CanActivate, OnModuleDestroy {
  private total = 0;
  private readonly slots: TurnSlots;

  constructor(
    private readonly reflector: Reflector,
    private readonly config: AppConfigService,
    @Inject(PROJECT_OWNERSHIP) private readonly owners: ProjectOwnershipPort,
    @Inject(TURN_SLOT_STORE) store: TurnSlotStorePort,
    @Optional() private readonly drain?: Drain,
  ) {
    this.slots = new TurnSlots(store, config.get('RUN_LEASE_MS'));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const starts = context.getType() === 'http' ? this.reflector.get<StartsTurnOptions | undefined>(STARTS_TURN, context.getHandler()) : undefined;
    if (!starts) return true;
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    if (starts.when && !starts.when(req)) return true;
    if (this.drain?.draining) throw shuttingDown(res);
    const key = principalOf(req).keyId;
    const maxTotal = this.config.get('MAX_CONCURRENT_TURNS');
    if (this.total >= maxTotal) throw tooMany(res, 'MAX_CONCURRENT_TURNS', maxTotal, RETRY_AFTER_S, 'Too many turns running on this instance');
    const maxKey = key === 'local' ? 0 : this.config.get('MAX_CONCURRENT_TURNS_PER_KEY');
    const maxProject = this.config.get('MAX_CONCURRENT_TURNS_PER_PROJECT');
    let slot: string | null = null;
    if (maxKey > 0 || maxProject > 0) {
      const project = starts.project ? starts.project(req) : await this.projectOf(req, this.reflector.get<ScopeSource[] | undefined>(PROJECT_SCOPE, context.getHandler()) ?? []);
      const taken = await this.slots.take(key, project, maxKey, maxProject);
      if ('refused' in taken) {
        if (taken.refused === 'key') throw tooMany(res, 'MAX_CONCURRENT_TURNS_PER_KEY', maxKey, RETRY_AFTER_S, 'Too many turns running for this key');
        throw tooMany(res, 'MAX_CONCURRENT_TURNS_PER_PROJECT', maxProject, RETRY_AFTER_S, `Too many turns running in project ${project}`);
      }
      slot = taken.id;
    }
    this.take(slot, res);
    return true;
  }

  /**
   * The project the turn runs in: that of the run a fork names in its path, else the body's
   * `projectId` (absent = default), or the project of the run a resume names in its body; on a
   * route whose project is named by a header (`@ProjectScope('header:…')`), that header.
   */
  private async projectOf(req: Request, scope: ScopeSource[]): Promise<string> {
    const header = scope.find((s) => s.startsWith('header:'));
    if (header) {
      const named = req.headers[header.slice('header:'.length)];
      return typeof named === 'string' ? named : 'default';
    }
    const params = (req.params ?? {}) as { requestId?: unknown };
    const body = (req.body ?? {}) as { projectId?: unknown; requestId?: unknown };
    if (typeof params.requestId === 'string') return this.projectOfRun(params.requestId);
    if (typeof body.projectId === 'string') return body.projectId;
    if (typeof body.requestId === 'string') return this.projectOfRun(body.requestId);
    return 'default';
  }

  private async projectOfRun(requestId: string): Promise<string> {
    if (!UUID.test(requestId)) return 'default';
    return (await this.owners.runProject(requestId)) ?? 'default';
  }

  async onModuleDestroy(): Promise<void> {
    await this.slots.close();
  }

  private take(slot: string | null, res: Response): void {
    this.total++;
    holdTurn(res, () => {
      this.total--;
      if (slot) void this.slots.release(slot);
    });
  }
}

/**
 * The instance is draining (SIGTERM, a rolling deploy): the turn was not started and nothing was
 * stored; `Retry-After` says to send it again, which a load balancer routes to another instance
 * (the readiness probe of this one already fails).
 */
function shuttingDown(res: Response): HttpException {
  res.setHeader('Retry-After', String(DRAINING_RETRY_AFTER_S));
  return new HttpException(
    { statusCode: 503, error: 'shutting_down', retryAfter: DRAINING_RETRY_AFTER_S, message: `This instance is shutting down and starts no new turn; nothing was stored. Retry after ${DRAINING_RETRY_AFTER_S} s (another instance answers)` },
    503,
  );
}
