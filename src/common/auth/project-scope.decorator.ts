import { SetMetadata } from '@nestjs/common';

export const PROJECT_SCOPE = 'orion:projectScope';
export const ANY_PROJECT = 'orion:anyProject';

/**
 * Where a route finds the project it touches, checked against the key's projects before it runs:
 * - `projectId`: the `projectId` of the body or query (absent = `default`)
 * - `projectId!`: the same, but a project-bound key must name it (the route would otherwise read
 *   every project, as `GET /api/trace` does without a filter)
 * - `run:<field>`: the project of the run whose id is in that path parameter or body field
 * - `conversation:<field>`: likewise for a conversation
 * - `header:<name>`: the project id in that request header (absent = `default`), for edges whose
 *   clients cannot add body fields (the OpenAI-compatible routes)
 * - `conversation:header:<name>`: the project of the conversation whose id is in that header
 * A resource of a project the key may not use is a 404, so its existence is not revealed.
 */
export type ScopeSource = 'projectId' | 'projectId!' | `run:${string}` | `conversation:${string}` | `header:${string}`;
export const ProjectScope = (...sources: ScopeSource[]): MethodDecorator => SetMetadata(PROJECT_SCOPE, sources);

/** The route touches no project's data (capabilities): any authenticated key may call it. */
export const AnyProject = (): MethodDecorator & ClassDecorator => SetMetadata(ANY_PROJECT, true);
