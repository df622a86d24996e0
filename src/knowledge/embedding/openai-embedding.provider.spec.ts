import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppConfigService } from '../../config/app-config.service';
import { createEmbeddingProvider } from './embedding-provider.factory';
import { OpenAiEmbeddingProvider } from './openai-embedding.provider';

interface Seen {
  url: string;
  auth: string | undefined;
  body: { model: string; input: string[]; encoding_format?: string };
}

/** A tiny OpenAI-compatible `/v1/embeddings` server: each text becomes [length, index-in-batch + 1]. */
describe('OpenAiEmbeddingProvider (over HTTP)', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  let reply: ((body: Seen['body']) => { status: number; json: unknown }) | null = null;

  beforeAll(async () => {
    server = createServer(async (req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push({ url: req.url ?? '', auth: req.headers.authorization, body });
      const out = reply
        ? reply(body)
        : {
            status: 200,
            json: {
              object: 'list',
              model: body.model,
              // deliberately out of order: the provider sorts by index
              data: body.input.map((t: string, i: number) => ({ object: 'embedding', index: i, embedding: [t.length, i + 1] })).reverse(),
              usage: { prompt_tokens: 1, total_tokens: 1 },
            },
          };
      res.writeHead(out.status, { 'content-type': 'application/json' }).end(JSON.stringify(out.json));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    seen.length = 0;
    reply = null;
  });

  it('posts float embeddings requests in batches and returns vectors in input order', async () => {
    const provider = new OpenAiEmbeddingProvider({ baseUrl: `${base}/v1`, apiKey: 'sk-test', model: 'embed-small', batchSize: 2, maxRetries: 0 });
    const vectors = await provider.embed(['a', 'bb', 'ccc']);
    expect(vectors).toEqual([
      [1, 1],
      [2, 2],
      [3, 1],
    ]);
    expect(seen.map((s) => s.body.input)).toEqual([['a', 'bb'], ['ccc']]);
    expect(seen[0]).toMatchObject({ url: '/v1/embeddings', auth: 'Bearer sk-test', body: { model: 'embed-small', encoding_format: 'float' } });
  });

  it('rejects on an HTTP error, and on a malformed answer', async () => {
    const provider = new OpenAiEmbeddingProvider({ baseUrl: `${base}/v1`, model: 'm', maxRetries: 0 });
    reply = () => ({ status: 500, json: { error: { message: 'boom' } } });
    await expect(provider.embed(['x'])).rejects.toThrow();
    reply = () => ({ status: 200, json: { object: 'list', data: [], model: 'm' } });
    await expect(provider.embed(['x'])).rejects.toThrow(/0 vectors for 1 inputs/);
  });

  it('is built from the configuration only when LLM_EMBEDDING_MODEL and LLM_BASE_URL are set', async () => {
    const config = (env: Record<string, unknown>) => ({ get: (k: string) => env[k] }) as unknown as AppConfigService;
    expect(createEmbeddingProvider(config({ LLM_BASE_URL: `${base}/v1` }))).toBeNull();
    expect(createEmbeddingProvider(config({ LLM_EMBEDDING_MODEL: 'm' }))).toBeNull();
    const ollama = createEmbeddingProvider(config({ LLM_EMBEDDING_MODEL: 'nomic', LLM_BASE_URL: `${base}/`, LLM_PROVIDER: 'ollama' }))!;
    expect(ollama.model).toBe('nomic');
    await ollama.embed(['hello']);
    expect(seen[0].url).toBe('/v1/embeddings');
  });
});
