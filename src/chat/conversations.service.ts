import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { OrchestrationService } from '../orchestration/orchestration.service';
import { RunDeletionService } from '../runs/run-deletion.service';
import { ChatException, ChatExceptionCode, modelNotAllowed } from './chat.exception';
import { rolledBack } from './turn-marks';
import { mapConversation, mapMessage, type ChatMessageDto, type ConversationDto } from './dto/chat-response.dto';
import type { ConversationSettingsDto } from './dto/send-message.dto';
import { ConversationRepository } from './repositories/conversation.repository';

@Injectable()
export class ConversationsService {
  constructor(
    private readonly repo: ConversationRepository,
    private readonly runDeletion: RunDeletionService,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly orchestration: OrchestrationService,
  ) {}

  async list(projectId: string): Promise<ConversationDto[]> {
    return (await this.repo.listByProject(projectId)).map(mapConversation);
  }

  async messages(id: string): Promise<ChatMessageDto[]> {
    await this.require(id);
    // a rolled-back turn's messages stay stored, out of the conversation
    return (await this.repo.listMessages(id)).filter((m) => !rolledBack(m)).map(mapMessage);
  }

  async updateSettings(id: string, dto: ConversationSettingsDto): Promise<ConversationDto> {
    await this.require(id);
    if (dto.model !== undefined && !this.orchestration.allowsModel(dto.model)) throw modelNotAllowed(dto.model, this.orchestration.modelNames(), 'model');
    const patch: Record<string, unknown> = {};
    if (dto.model !== undefined) patch.model = dto.model;
    if (dto.orchestratorEnabled !== undefined) patch.orchestratorEnabled = dto.orchestratorEnabled;
    if (dto.customInstructions !== undefined) patch.customInstructions = dto.customInstructions;
    if (dto.approvals !== undefined) patch.approvals = dto.approvals;
    const updated = await this.repo.updateSettings(id, patch);
    return mapConversation(updated!);
  }

  async rename(id: string, title: string): Promise<ConversationDto> {
    await this.require(id);
    const renamed = await this.repo.rename(id, title);
    if (!renamed) throw notFound(id); // deleted meanwhile
    return mapConversation(renamed);
  }

  /**
   * Deletes the conversation, its messages, its runs with their stored events, and their trace,
   * in one transaction: all of it or nothing. A run still running refuses it (409
   * run_in_progress) and nothing is deleted.
   */
  async remove(id: string): Promise<void> {
    await this.require(id);
    await this.runDeletion.settle();
    const runs = await this.dataSource.transaction(async (m) => {
      if (!(await this.repo.lockForDelete(m, id))) throw notFound(id);
      const deleted = await this.runDeletion.deleteConversationRuns(m, id);
      await this.repo.deleteWithMessages(m, id);
      return deleted;
    });
    await this.runDeletion.deleteLateTrace(this.dataSource.manager, runs.requestIds);
  }

  async require(id: string) {
    const c = await this.repo.findById(id);
    if (!c) throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${id} not found`);
    return c;
  }
}

function notFound(id: string): ChatException {
  return new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${id} not found`);
}
