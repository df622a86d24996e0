import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { RunsModule } from '../runs/runs.module';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { RunContinuationService } from './run-continuation.service';
import { ConversationsService } from './conversations.service';
import { ChatMessageEntity } from './entities/chat-message.entity';
import { ConversationEntity } from './entities/conversation.entity';
import { ConversationRepository } from './repositories/conversation.repository';
import { ConversationTurnRepository } from './repositories/conversation-turn.repository';
import { TurnGate } from './turn-gate.service';
import { CommandStrategy } from './commands/command.strategy';
import { TwoStageEnabledGuard } from './two-stage-enabled.guard';
import { PROJECT_OWNERSHIP } from '../common/auth/project-ownership.port';
import { TURN_SLOT_STORE } from '../common/limits/turn-slot-store.port';
import { TurnSlotRepository } from '../runs/repositories/turn-slot.repository';
import { ProjectOwnership } from './project-ownership';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { StorageRetentionRepository } from './repositories/storage-retention.repository';
import { StorageMaintenanceService } from './storage-maintenance.service';
import { BudgetGate } from './budgets/budget-gate.service';
import { BudgetRepository } from './repositories/budget.repository';
import { UsageReportRepository } from './repositories/usage-report.repository';

const conversationTables = TypeOrmModule.forFeature([ConversationEntity, ChatMessageEntity]);
const runs = RunsModule.register({ imports: [conversationTables], store: ConversationRepository, queue: ConversationTurnRepository });

/** Conversations, messages and commands; turns are built by orchestration and run by the run engine. */
@Module({
  imports: [conversationTables, OrchestrationModule, WebhooksModule, runs],
  controllers: [ChatController],
  providers: [
    ConversationRepository, ConversationTurnRepository, TurnGate, ChatService, RunContinuationService, ConversationsService, CommandStrategy, TwoStageEnabledGuard,
    StorageRetentionRepository, StorageMaintenanceService, BudgetGate, BudgetRepository, UsageReportRepository,
    // what the global guards (common/auth, common/limits) ask of the runs and conversations
    ProjectOwnership,
    { provide: PROJECT_OWNERSHIP, useExisting: ProjectOwnership },
    { provide: TURN_SLOT_STORE, useExisting: TurnSlotRepository },
  ],
  // ChatService and the run engine (reconnect) for the edges that speak other wire formats
  exports: [PROJECT_OWNERSHIP, TURN_SLOT_STORE, ChatService, ConversationsService, StorageRetentionRepository, StorageMaintenanceService, BudgetRepository, UsageReportRepository, runs],
})
export class ChatModule {}
