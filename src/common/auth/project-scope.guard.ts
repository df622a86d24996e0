import { BadRequestException, CanActivate, ExecutionContext, ForbiddenException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { IS_PUBLIC } from './public.decorator';
import { ANY_PROJECT, PROJECT_SCOPE, type ScopeSource } from './project-scope.decorator';
import { canUseProject, principalOf } from './principal';
import { PROJECT_OWNERSHIP, type ProjectOwnershipPort } from './project-ownership.port';
import { UUID_PATTERN as UUID } from '../util/uuid';


/**
 * Runs after the ApiKeyGuard: a key bound to some projects reaches only their data. Keys for
 * every project ('*': API_KEYS, local mode, admin keys made with '*') pass without a lookup.
 * Default-deny again: a route that declares neither @ProjectScope nor @AnyProject is refused to
 * a project-bound key, so a route added later cannot leak across projects by omission.
 */
@Injectable()
export class ProjectScopeGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(PROJECT_OWNERSHIP) private readonly owners: ProjectOwnershipPort,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<Request>();
    const principal = principalOf(req);
    if (principal.projects === '*' || this.reflector.getAllAndOverride<boolean>(ANY_PROJECT, targets)) return true;
    const sources = this.reflector.get<ScopeSource[] | undefined>(PROJECT_SCOPE, context.getHandler());
    if (!sources) throw new ForbiddenException('This route needs a key for every project');
    for (const source of sources) {
      for (const project of await this.projectsOf(req, source)) {
        if (project === undefined) continue; // field absent or malformed: validation answers it
        if (!canUseProject(principal, project)) throw new NotFoundException(notFoundMessage(source));
      }
    }
    return true;
  }

  /**
   * Every project a source names, wherever the request carries it. The handler reads one place
   * (a POST's body, a GET's query, a path parameter); checking only the first place found let a
   * GET carry an allowed project in a body the handler never reads, or a POST an allowed one in
   * a query while the handler used `default`. So the place the handler reads is always checked
   * (absent `projectId` there = `default`), and any other place that names one is checked too.
   */
  private async projectsOf(req: Request, source: ScopeSource): Promise<Array<string | undefined>> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const query = req.query as Record<string, unknown>;
    const readsBody = !['GET', 'HEAD', 'DELETE'].includes(req.method.toUpperCase());
    if (source === 'projectId' || source === 'projectId!') {
      const [read, other] = readsBody ? [body.projectId, query.projectId] : [query.projectId, body.projectId];
      if (read === undefined && source === 'projectId!') throw new BadRequestException('projectId is required with a key bound to projects');
      const named = (v: unknown) => (typeof v === 'string' ? v : undefined);
      return [read === undefined ? 'default' : named(read), ...(other === undefined ? [] : [named(other) ?? INVALID])];
    }
    if (source.startsWith('header:')) {
      const named = req.headers[source.slice('header:'.length)];
      return [named === undefined ? 'default' : typeof named === 'string' ? named : INVALID];
    }
    const field = source.slice(source.indexOf(':') + 1);
    const kind = source.startsWith('run:') ? 'run' : 'conversation';
    const ids = field.startsWith('header:') ? [req.headers[field.slice('header:'.length)]].filter((v) => v !== undefined) : [req.params?.[field], body[field], query[field]].filter((v) => v !== undefined);
    const out: Array<string | undefined> = [];
    for (const id of ids) out.push(typeof id === 'string' && UUID.test(id) ? await this.ownerOf(kind, id) : undefined);
    return out;
  }

  /** The project of a run or conversation; undefined when it does not exist (the route's own 404). */
  private ownerOf(kind: 'run' | 'conversation', id: string): Promise<string | undefined> {
    return kind === 'run' ? this.owners.runProject(id) : this.owners.conversationProject(id);
  }
}

/** A projectId the handler does not read and that is not even a string: no key may name it. */
const INVALID = '\u0000invalid';

function notFoundMessage(source: ScopeSource): string {
  if (source.startsWith('projectId') || source.startsWith('header:')) return 'Unknown project';
  return source.startsWith('run:') ? 'Unknown run' : 'Unknown conversation';
}
