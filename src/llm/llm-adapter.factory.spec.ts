import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { AppConfigModule } from '../config/config.module';
import { AppConfigService } from '../config/app-config.service';
import { validateEnv } from '../config/env.schema';
import { OllamaAdapter } from './adapters/ollama.adapter';
import { OpenAiCompatibleAdapter } from './adapters/openai-compatible.adapter';
import { ReplayAdapter } from './adapters/replay.adapter';
import { LLM_ADAPTER, type LlmAdapter } from './llm-adapter.port';
import { LlmAdapterFactory } from './llm-adapter.factory';
import { LlmModule } from './llm.module';

function factoryFor(env: Record<string, string>): LlmAdapterFactory {
  return new LlmAdapterFactory(new AppConfigService(new ConfigService(validateEnv(env) as unknown as Record<string, unknown>)));
}

describe('LlmAdapterFactory', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('keeps one adapter per (provider, baseUrl, model)', () => {
    const factory = factoryFor({ LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'm1', LLM_API_KEY: 'sk-secret-value-123' });
    const a = factory.configured();
    expect(a).toBeInstanceOf(OpenAiCompatibleAdapter);
    expect(factory.configured()).toBe(a);
    expect(factory.get({ provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1/', model: 'm1' })).toBe(a);
    const other = factory.get({ provider: 'openai', model: 'm2' });
    expect(other).not.toBe(a);
    expect(other.model).toBe('m2');
    expect(factory.get({ provider: 'ollama', baseUrl: 'http://127.0.0.1:9' })).toBeInstanceOf(OllamaAdapter);
    expect(factory.get({ provider: 'replay' })).toBe(factory.get({ provider: 'replay' }));
    expect(factory.size).toBe(4);
  });

  it('defaults to replay without LLM_BASE_URL', async () => {
    const adapter = factoryFor({}).configured();
    expect(adapter).toBeInstanceOf(ReplayAdapter);
    await expect(adapter.capabilities()).resolves.toMatchObject({ replay: true, contextWindow: 32_768 });
  });

  it('logs where requests go, never the key', () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    factoryFor({ LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'm1', LLM_API_KEY: 'sk-secret-value-123' }).configured();
    const lines = log.mock.calls.map((c) => String(c[0]));
    expect(lines.some((l) => l.includes('provider=openai') && l.includes('http://127.0.0.1:9/v1') && l.includes('model=m1'))).toBe(true);
    expect(lines.join('\n')).not.toContain('sk-secret');
    log.mockRestore();
  });

  it('LlmModule provides LLM_ADAPTER (the configured adapter) and the factory', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule.forRoot({ LLM_PROVIDER: 'replay', LLM_BASE_URL: undefined }), LlmModule],
    }).compile();
    const adapter = moduleRef.get<LlmAdapter>(LLM_ADAPTER);
    expect(adapter.provider).toBe('replay');
    expect(moduleRef.get(LlmAdapterFactory).configured()).toBe(adapter);
    await moduleRef.close();
  });
});
