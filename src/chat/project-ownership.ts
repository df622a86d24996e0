import { Injectable } from '@nestjs/common';
import type { ProjectOwnershipPort } from '../common/auth/project-ownership.port';
import { RunRepository } from '../runs/repositories/run.repository';
import { ConversationRepository } from './repositories/conversation.repository';

/**
 * The guards' ProjectOwnershipPort, answered here because chat is the lowest module that sees
 * both tables it asks about: runs (the run engine's) and conversations (this module's).
 */
@Injectable()
export class ProjectOwnership implements ProjectOwnershipPort {
  constructor(
    private readonly runs: RunRepository,
    private readonly conversations: ConversationRepository,
  ) {}

  runProject(requestId: string): Promise<string | undefined> {
    return this.runs.projectOf(requestId);
  }

  conversationProject(id: string): Promise<string | undefined> {
    return this.conversations.projectOf(id);
  }
}
