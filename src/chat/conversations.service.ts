import { Injectable } from '@nestjs/common';
import { ChatException, ChatExceptionCode } from './chat.exception';
import { mapConversation, mapMessage, type ChatMessageDto, type ConversationDto } from './dto/chat-response.dto';
import type { ConversationSettingsDto } from './dto/send-message.dto';
import { ConversationRepository } from './repositories/conversation.repository';

@Injectable()
export class ConversationsService {
  constructor(private readonly repo: ConversationRepository) {}

  async list(projectId: string): Promise<ConversationDto[]> {
    return (await this.repo.listByProject(projectId)).map(mapConversation);
  }

  async messages(id: string): Promise<ChatMessageDto[]> {
    await this.require(id);
    return (await this.repo.listMessages(id)).map(mapMessage);
  }

  async updateSettings(id: string, dto: ConversationSettingsDto): Promise<ConversationDto> {
    await this.require(id);
    const patch: Record<string, unknown> = {};
    if (dto.orchestratorEnabled !== undefined) patch.orchestratorEnabled = dto.orchestratorEnabled;
    if (dto.customInstructions !== undefined) patch.customInstructions = dto.customInstructions;
    const updated = await this.repo.updateSettings(id, patch);
    return mapConversation(updated!);
  }

  async require(id: string) {
    const c = await this.repo.findById(id);
    if (!c) throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${id} not found`);
    return c;
  }
}
