import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { OpenAiCompletionsService } from './openai-completions.service';
import { OpenAiController } from './openai.controller';
import { ResponsesController } from './responses/responses.controller';
import { OpenAiResponsesService } from './responses/openai-responses.service';

/** The OpenAI-compatible edge (/v1: chat completions and responses): another wire format over the chat turns, not another engine. */
@Module({
  imports: [ChatModule, OrchestrationModule],
  // ResponsesController first: OpenAiController ends with the /v1 catch-all
  controllers: [ResponsesController, OpenAiController],
  providers: [OpenAiCompletionsService, OpenAiResponsesService],
})
export class OpenAiCompatModule {}
