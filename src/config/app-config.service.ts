import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { EnvironmentVariables } from './env.schema';

/** Typed read access to the validated configuration: `config.get('MAX_ITERATIONS')`. */
@Injectable()
export class AppConfigService {
  constructor(private readonly config: ConfigService<EnvironmentVariables, true>) {}

  get<K extends keyof EnvironmentVariables>(key: K): EnvironmentVariables[K] {
    return this.config.get(key, { infer: true }) as EnvironmentVariables[K];
  }

  /** Splits a comma-separated variable into trimmed, non-empty items. */
  list(key: 'API_KEYS' | 'FETCH_ALLOW_HOSTS' | 'TOOLS_ALLOW' | 'TOOLS_DENY' | 'TOOLS_RERUN' | 'TOOLS_REQUIRE_APPROVAL'): string[] {
    const raw = this.get(key);
    return raw ? raw.split(',').map((s) => s.trim()).filter(Boolean) : [];
  }
}

