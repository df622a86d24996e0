import { BadRequestException, CanActivate, ExecutionContext, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { DataSource } from 'typeorm';
import { IS_PUBLIC } from './public.decorator';
import { ANY_PROJECT, PROJECT_SCOPE, type ScopeSource } from './project-scope.decorator';
import { canUseProject, principalOf } from './principal';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
    private readonly ds: DataSource,
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
      const project = await this.projectOf(req, source);
      if (project === undefined) continue; // field absent or malformed: validation answers it
      if (!canUseProject(principal, project)) throw new NotFoundException(notFoundMessage(source));
    }
    return true;
  }

  /** The project a source names; null when the resource does not exist, undefined when not given. */
  private async projectOf(req: Request, source: ScopeSource): Promise<string | null | undefined> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (source === 'projectId' || source === 'projectId!') {
      const v = body.projectId ?? req.query.projectId;
      if (v === undefined && source === 'projectId!') throw new BadRequestException('projectId is required with a key bound to projects');
      return typeof v === 'string' ? v : v === undefined ? 'default' : undefined;
    }
    const [kind, field] = source.split(':');
    const id = req.params?.[field] ?? body[field] ?? req.query[field];
    if (typeof id !== 'string' || !UUID.test(id)) return undefined;
    const sql = kind === 'run' ? 'SELECT project_id FROM runs WHERE request_id = $1' : 'SELECT project_id FROM conversations WHERE id = $1';
    const rows = (await this.ds.query(sql, [id])) as Array<{ project_id: string }>;
    // an unknown id is a 404 from the route itself; answering it here too changes nothing
    return rows[0]?.project_id ?? undefined;
  }
}

function notFoundMessage(source: ScopeSource): string {
  if (source.startsWith('projectId')) return 'Unknown project';
  return source.startsWith('run:') ? 'Unknown run' : 'Unknown conversation';
}
