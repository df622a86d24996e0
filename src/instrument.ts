import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'dotenv';
import { startTracing } from './observability/tracing';

/**
 * Imported first by main.ts: OpenTelemetry must hook `http` before Express loads it. The SDK
 * reads the OTEL_* variables from process.env, so those given in `.env` are copied there
 * (real environment variables win, as for every other setting).
 */
const dotEnv = resolve(process.cwd(), '.env');
if (existsSync(dotEnv)) {
  for (const [k, v] of Object.entries(parse(readFileSync(dotEnv)))) {
    if (k.startsWith('OTEL_') && process.env[k] === undefined) process.env[k] = v;
  }
}
startTracing();
