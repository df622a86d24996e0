import OpenAI from 'openai';
import type { EmbeddingProvider } from './embedding-provider.port';

export interface OpenAiEmbeddingOptions {
  /** the OpenAI-compatible API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1` */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs?: number;
  /** texts per request */
  batchSize?: number;
  maxRetries?: number;
}

/**
 * Texts per embeddings request. OpenAI accepts up to 2,048 inputs; local servers (llama.cpp,
 * Ollama, vLLM) often take far fewer at once, and 32 chunks of 1,200 characters stay well
 * under every per-request token limit we know of (~10k tokens).
 */
export const EMBEDDING_BATCH_SIZE = 32;

/**
 * Embeddings through any OpenAI-compatible `/embeddings` endpoint with the `openai` SDK.
 * Asks for `float` vectors explicitly: the SDK's default (base64) is not understood by every
 * compatible server.
 */
export class OpenAiEmbeddingProvider implements EmbeddingProvider {
  readonly model: string;
  private readonly client: OpenAI;
  private readonly batchSize: number;

  constructor(options: OpenAiEmbeddingOptions) {
    this.model = options.model;
    this.batchSize = Math.max(1, options.batchSize ?? EMBEDDING_BATCH_SIZE);
    this.client = new OpenAI({
      baseURL: options.baseUrl,
      // local servers need none; the SDK refuses to start without one
      apiKey: options.apiKey || 'not-needed',
      timeout: options.timeoutMs ?? 60_000,
      maxRetries: options.maxRetries ?? 1,
    });
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      signal?.throwIfAborted();
      const batch = texts.slice(i, i + this.batchSize);
      const res = await this.client.embeddings.create({ model: this.model, input: batch, encoding_format: 'float' }, { signal });
      const vectors = [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
      if (vectors.length !== batch.length) {
        throw new Error(`embedding endpoint returned ${vectors.length} vectors for ${batch.length} inputs`);
      }
      for (const v of vectors) {
        if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'number' || !Number.isFinite(x))) {
          throw new Error('embedding endpoint returned a vector that is not a non-empty list of finite numbers');
        }
        if (out.length > 0 && v.length !== out[0].length) throw new Error('embedding endpoint returned vectors of different lengths');
      }
      out.push(...vectors);
    }
    return out;
  }
}
