import { Global, Module } from '@nestjs/common';
import { LLM_ADAPTER } from './llm-adapter.port';
import { LlmAdapterFactory } from './llm-adapter.factory';
import { LlmEvents } from './llm-events';
import { LlmModels } from './llm-models';

/**
 * The LLM module: `LLM_ADAPTER` is the configured adapter (LLM_PROVIDER openai | ollama |
 * replay), `LlmAdapterFactory` gives adapters for other endpoints, cached per
 * `(provider, baseUrl, model)`, `LlmModels` the models a turn may pick (LLM_MODELS). Global, because every protocol needs a model and nothing else
 * from here. Relies on the global AppConfigModule.
 */
@Global()
@Module({
  providers: [
    LlmEvents,
    LlmAdapterFactory,
    LlmModels,
    {
      provide: LLM_ADAPTER,
      useFactory: (factory: LlmAdapterFactory) => factory.configured(),
      inject: [LlmAdapterFactory],
    },
  ],
  exports: [LlmAdapterFactory, LLM_ADAPTER, LlmEvents, LlmModels],
})
export class LlmModule {}
