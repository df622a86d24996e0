import { type DynamicModule, Module, type ModuleMetadata, type Type } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { ANSWER_STORE, type AnswerStore } from './answer-store.port';
import { QUEUED_TURNS, type QueuedTurns } from './queued-turns.port';
import { RunEventEntity } from './entities/run-event.entity';
import { RunEntity } from './entities/run.entity';
import { ApprovalEntity } from './entities/approval.entity';
import { ApprovalRepository } from './repositories/approval.repository';
import { ApprovalsService } from './approvals/approvals.service';
import { ToolsModule } from '../tools/tools.module';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunEventWriter } from './run-event-writer.service';
import { RunRepository } from './repositories/run.repository';
import { RunTakeoverRepository } from './repositories/run-takeover.repository';
import { RunStorageRepository } from './repositories/run-storage.repository';
import { TurnSlotRepository } from './repositories/turn-slot.repository';
import { RunControlService } from './run-control.service';
import { RunDeletionService } from './run-deletion.service';
import { RunEventBus } from './run-event-bus.service';
import { RunEventsService } from './run-events.service';
import { RunExecutorService } from './run-executor.service';
import { RunHandover } from './run-handover';
import { RunDrainService } from './run-drain.service';
import { RunPlansService } from './run-plans.service';
import { RunSweeperService } from './run-sweeper.service';
import { RunsController } from './runs.controller';
import { RunsService } from './runs.service';
import { WebhooksModule } from '../webhooks/webhooks.module';

/**
 * The run engine: runs and their events, stored before they are sent; cancel and pause flags
 * across instances; leases and the sweeper; reconnect. The module above it (chat) registers it
 * with the store of the answers (its conversations), so nothing here imports chat.
 */
@Module({})
export class RunsModule {
  static register(answers: { imports?: ModuleMetadata['imports']; store: Type<AnswerStore>; queue?: Type<QueuedTurns> }): DynamicModule {
    return {
      module: RunsModule,
      imports: [TypeOrmModule.forFeature([RunEntity, RunEventEntity, ApprovalEntity]), OrchestrationModule, ToolsModule, WebhooksModule, ...(answers.imports ?? [])],
      controllers: [RunsController],
      providers: [
        { provide: ANSWER_STORE, useClass: answers.store },
        ...(answers.queue ? [{ provide: QUEUED_TURNS, useClass: answers.queue }] : []),
        RunRepository,
        RunTakeoverRepository,
        RunEventRepository,
        RunEventWriter,
        RunEventBus,
        RunControlService,
        RunExecutorService,
        RunHandover,
        RunDrainService,
        RunSweeperService,
        RunPlansService,
        RunsService,
        RunEventsService,
        RunDeletionService,
        TurnSlotRepository,
        RunStorageRepository,
        ApprovalRepository,
        ApprovalsService,
      ],
      exports: [RunDrainService, RunsService, RunDeletionService, RunRepository, RunStorageRepository, TurnSlotRepository, RunEventsService, ApprovalsService],
    };
  }
}
