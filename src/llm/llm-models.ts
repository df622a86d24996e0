import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { modelList } from '../config/env.schema';
import { LlmAdapterFactory } from './llm-adapter.factory';
import type { LlmAdapter, LlmCapabilities } from './llm-adapter.port';

/** One allowed model as GET /api/config/capabilities lists it. */
export interface LlmModelInfo {
  name: string;
  default: boolean;
  toolCalling: boolean;
  contextWindow?: number;
}

/**
 * The models a conversation or a message may pick: LLM_MODELS (first = default), else the one
 * configured model. Each model's adapter comes from the factory's cache, so its client and its
 * capability answer (Ollama's /api/show) are kept per model.
 */
@Injectable()
export class LlmModels {
  private readonly allowed: string[];

  constructor(
    private readonly config: AppConfigService,
    private readonly factory: LlmAdapterFactory,
  ) {
    const list = modelList(config.get('LLM_MODELS'));
    this.allowed = list.length > 0 ? list : [factory.configured().model];
  }

  /** The model a turn uses when neither the message nor the conversation names one. */
  get defaultModel(): string {
    // validateEnv fills LLM_MODEL from LLM_MODELS, and refuses one outside it
    return this.config.get('LLM_MODELS') ? (this.config.get('LLM_MODEL') ?? this.allowed[0]) : this.allowed[0];
  }

  names(): readonly string[] {
    return this.allowed;
  }

  allows(name: string): boolean {
    return this.allowed.includes(name);
  }

  /** The adapter of an allowed model (the default one when none is named). */
  adapter(name?: string): LlmAdapter {
    if (name === undefined || name === this.defaultModel) return this.factory.configured();
    if (!this.allows(name)) throw new Error(`model ${name} is not allowed (LLM_MODELS)`);
    return this.factory.get({ provider: this.provider(), model: name });
  }

  /** The model's capabilities; undefined when it cannot say (the endpoint is down). */
  async capabilities(name?: string): Promise<LlmCapabilities | undefined> {
    return this.adapter(name).capabilities().catch(() => undefined);
  }

  async list(): Promise<LlmModelInfo[]> {
    const fallback = this.config.get('LLM_TOOL_CALLING');
    return Promise.all(
      this.allowed.map(async (name) => {
        const caps = await this.capabilities(name);
        return {
          name,
          default: name === this.defaultModel,
          toolCalling: caps?.toolCalling ?? fallback,
          ...(caps?.contextWindow !== undefined ? { contextWindow: caps.contextWindow } : {}),
        };
      }),
    );
  }

  private provider() {
    return this.config.get('LLM_PROVIDER') ?? (this.config.get('LLM_BASE_URL') ? 'openai' : 'replay');
  }
}
