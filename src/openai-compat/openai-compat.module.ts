import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { OpenAiCompletionsService } from './openai-completions.service';
import { OpenAiController } from './openai.controller';

/** The OpenAI-compatible edge (/v1): another wire format over the chat turns, not another engine. */
@Module({
  imports: [ChatModule, OrchestrationModule],
  controllers: [OpenAiController],
  providers: [OpenAiCompletionsService],
})
export class OpenAiCompatModule {}
