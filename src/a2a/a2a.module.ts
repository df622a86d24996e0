import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { A2aController } from './a2a.controller';
import { A2aTurnsService } from './a2a-turns.service';

/** The A2A agent edge: Orion's chat turn as an A2A task, over the same runs, reconnect and cancel as every route. */
@Module({
  imports: [ChatModule],
  controllers: [A2aController],
  providers: [A2aTurnsService],
})
export class A2aModule {}
