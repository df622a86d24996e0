import { Injectable } from '@nestjs/common';
import type { ProjectOwnershipPort } from '../common/auth/project-ownership.port';
import { RunRepository } from '../runs/repositories/run.repository';
import { ConversationRepository } from './repositories/conversation.repository';
import { ConversationTurnRepository } from './repositories/conversation-turn.repository';

/**
 * The guards' ProjectOwnershipPort, answered here because chat is the lowest module that sees
 * both tables it asks about: runs (the run engine's) and conversations (this module's).
 */
@Injectable()
export class ProjectOwnership implements ProjectOwnershipPort {
  constructor(
    private readonly runs: RunRepository,
    private readonly conversations: ConversationRepository,
    private readonly turns: ConversationTurnRepository,
  ) {}

  /** a turn still queued is named by its requestId too (its run opens when it starts) */
  async runProject(requestId: string): Promise<string | undefined> {
    return (await this.runs.projectOf(requestId)) ?? (await this.turns.projectOf(requestId));
  }

  conversationProject(id: string): Promise<string | undefined> {
    return this.conversations.projectOf(id);
  }
}
