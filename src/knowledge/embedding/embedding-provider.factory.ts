import { Logger } from '@nestjs/common';
import type { AppConfigService } from '../../config/app-config.service';
import type { EmbeddingProvider } from './embedding-provider.port';
import { OpenAiEmbeddingProvider } from './openai-embedding.provider';

/**
 * The embedding provider the configuration describes, or null:
 * - LLM_EMBEDDING_MODEL unset → null (full-text search only);
 * - set, with LLM_BASE_URL → the OpenAI-compatible embeddings API of that endpoint, with
 *   LLM_API_KEY. For LLM_PROVIDER=ollama the native root is given, so `/v1` is appended
 *   (Ollama serves `/v1/embeddings`); for `openai` the URL is used as given, like the chat adapter.
 * - set without LLM_BASE_URL (the replay provider) → null, with a warning.
 */
export function createEmbeddingProvider(config: AppConfigService): EmbeddingProvider | null {
  const model = config.get('LLM_EMBEDDING_MODEL');
  if (!model) return null;
  const base = config.get('LLM_BASE_URL');
  if (!base) {
    new Logger('Knowledge').warn('LLM_EMBEDDING_MODEL is set but LLM_BASE_URL is not: knowledge search stays full-text only');
    return null;
  }
  const baseUrl =
    config.get('LLM_PROVIDER') === 'ollama' ? `${base.replace(/\/+$/, '').replace(/\/(v1|api)$/, '')}/v1` : base.replace(/\/+$/, '');
  return new OpenAiEmbeddingProvider({ baseUrl, apiKey: config.get('LLM_API_KEY'), model, timeoutMs: config.get('LLM_TIMEOUT_MS') });
}
