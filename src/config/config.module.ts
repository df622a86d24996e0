import { DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'dotenv';
import { validateEnv } from './env.schema';
import { AppConfigService } from './app-config.service';

/** `.env` in the working directory, parsed as @nestjs/config would; real environment variables win. */
export function readDotEnv(): Record<string, string> {
  if (process.env.NODE_ENV === 'test') return {};
  const file = resolve(process.cwd(), '.env');
  return existsSync(file) ? parse(readFileSync(file)) : {};
}

/**
 * Configuration validated when the app is built (not when this file is imported), from `.env`,
 * the environment and optional overrides. Unlike ConfigModule's own `validate`, nothing is
 * written back into `process.env`, so several apps with different settings can live in one
 * process (tests, the two-instance scenario).
 */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(overrides: Record<string, string | undefined> = {}): DynamicModule {
    return {
      module: AppConfigModule,
      imports: [
        ConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          skipProcessEnv: true,
          validatePredefined: false,
          load: [() => ({ ...validateEnv({ ...readDotEnv(), ...process.env, ...overrides }) })],
        }),
      ],
      providers: [AppConfigService],
      exports: [AppConfigService],
    };
  }
}
