import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { RunsModule } from '../runs/runs.module';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { ConversationsService } from './conversations.service';
import { ChatMessageEntity } from './entities/chat-message.entity';
import { ConversationEntity } from './entities/conversation.entity';
import { ConversationRepository } from './repositories/conversation.repository';
import { CommandStrategy } from './commands/command.strategy';
import { TwoStageEnabledGuard } from './two-stage-enabled.guard';

const conversationTables = TypeOrmModule.forFeature([ConversationEntity, ChatMessageEntity]);

/** Conversations, messages and commands; turns are built by orchestration and run by the run engine. */
@Module({
  imports: [conversationTables, OrchestrationModule, RunsModule.register({ imports: [conversationTables], store: ConversationRepository })],
  controllers: [ChatController],
  providers: [ConversationRepository, ChatService, ConversationsService, CommandStrategy, TwoStageEnabledGuard],
})
export class ChatModule {}
