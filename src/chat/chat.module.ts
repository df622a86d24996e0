import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { ToolsModule } from '../tools/tools.module';
import { KnowledgeModule } from '../knowledge/knowledge.module';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { ConversationsService } from './conversations.service';
import { ChatMessageEntity } from './entities/chat-message.entity';
import { ConversationEntity } from './entities/conversation.entity';
import { RunEventEntity } from './entities/run-event.entity';
import { RunEntity } from './entities/run.entity';
import { ConversationRepository } from './repositories/conversation.repository';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import { RunEventBus } from './run-event-bus.service';
import { RunExecutorService } from './run-executor.service';
import { RunsController } from './runs.controller';
import { RunsService } from './runs.service';
import { RunEventsService } from './run-events.service';
import { RunSweeperService } from './run-sweeper.service';
import { CommandStrategy } from './commands/command.strategy';
import { TwoStageEnabledGuard } from './two-stage-enabled.guard';

@Module({
  imports: [TypeOrmModule.forFeature([ConversationEntity, ChatMessageEntity, RunEntity, RunEventEntity]), OrchestrationModule, ToolsModule, KnowledgeModule],
  controllers: [ChatController, RunsController],
  providers: [
    ConversationRepository,
    RunRepository,
    RunEventRepository,
    RunEventBus,
    RunControlService,
    RunExecutorService,
    ChatService,
    ConversationsService,
    RunsService,
    RunEventsService,
    RunSweeperService,
    CommandStrategy,
    TwoStageEnabledGuard,
  ],
})
export class ChatModule {}
