import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { UiStreamController } from './ui-stream.controller';
import { UiStreamService } from './ui-stream.service';

/**
 * The AI SDK UI message stream edge (POST /api/chat/ui and its resume route): another wire
 * format for the chat turn, not another engine; it starts turns through ChatService and
 * reconnects through the run engine's stored events.
 */
@Module({
  imports: [ChatModule],
  controllers: [UiStreamController],
  providers: [UiStreamService],
})
export class UiStreamModule {}
