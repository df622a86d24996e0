import { NotFoundException } from '@nestjs/common';
import type { Request } from 'express';
import { badFields } from '../errors/field-errors';
import { canUseProject, principalOf, type Principal } from './principal';
import { PROJECT_ID_PATTERN } from '../workspace/project-id';

/** The header an MCP or A2A client adds to pick a project (their clients take extra headers, not body fields). */
export const PROJECT_HEADER = 'x-orion-project';

/**
 * The project a protocol edge acts in: the X-Orion-Project header when sent, else the key's one
 * project when it is bound to exactly one, else `default`. A project the key may not use is a 404,
 * as on every route, so its existence is not revealed.
 */
export function edgeProject(principal: Principal, header: string | string[] | undefined): string {
  if (Array.isArray(header)) throw badFields([{ field: PROJECT_HEADER, message: `The ${PROJECT_HEADER} header must be sent once` }]);
  const named = header === undefined || header === '' ? undefined : header;
  if (named !== undefined && !PROJECT_ID_PATTERN.test(named)) {
    throw badFields([{ field: PROJECT_HEADER, message: `The ${PROJECT_HEADER} header must be 1-64 characters of A-Z, a-z, 0-9, _ or -` }]);
  }
  const projectId = named ?? (principal.projects !== '*' && principal.projects.length === 1 ? principal.projects[0] : 'default');
  if (!canUseProject(principal, projectId)) throw new NotFoundException('Unknown project');
  return projectId;
}

const RESOLVED = Symbol('orion.edgeProject');
type WithProject = Request & { [RESOLVED]?: string };

/**
 * edgeProject for a request, resolved once: the turn-limit guard needs it to count the turn and
 * the handler to run it, and both must act in the same project.
 */
export function edgeProjectOf(req: Request): string {
  const held = (req as WithProject)[RESOLVED];
  if (held !== undefined) return held;
  const projectId = edgeProject(principalOf(req), req.headers[PROJECT_HEADER]);
  (req as WithProject)[RESOLVED] = projectId;
  return projectId;
}
