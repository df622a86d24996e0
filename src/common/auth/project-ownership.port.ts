import type { InjectionToken } from '@nestjs/common';

/**
 * Which project a run or a conversation belongs to: what the project-scope and turn-limit guards
 * need to know of rows they do not own. `common` sits below the database layer, so the guards ask
 * this port; the modules that own the `runs` and `conversations` tables answer it (ChatModule
 * provides it).
 */
export interface ProjectOwnershipPort {
  /** The project of the run `requestId` (a UUID); undefined when there is no such run. */
  runProject(requestId: string): Promise<string | undefined>;
  /** The project of the conversation `id` (a UUID); undefined when there is no such conversation. */
  conversationProject(id: string): Promise<string | undefined>;
}

export const PROJECT_OWNERSHIP: InjectionToken<ProjectOwnershipPort> = Symbol('PROJECT_OWNERSHIP');
