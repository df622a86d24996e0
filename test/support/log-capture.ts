import { Writable } from 'node:stream';
import { Logger, PARAMS_PROVIDER_TOKEN } from 'nestjs-pino';
import { AppConfigService } from '../../src/config/app-config.service';
import { SecretRegistry } from '../../src/common/secrets/secret-registry';
import { loggingParams } from '../../src/observability/logging';
import type { StartAppOptions } from './app';

/**
 * The app's JSON log lines, as written (after masking), collected in memory: pass `options` to
 * startApp and read `logs` (`text()` joins them) to check what reached the logs.
 */
export function captureLogs(): { logs: string[]; text: () => string; requestLogged: (urlStart: string) => boolean; options: Pick<StartAppOptions, 'override' | 'setup'> } {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  return {
    logs,
    text: () => logs.join(''),
    // the access line is written when the response finishes, which may be after the client read it:
    // tests wait for it (waitFor) before reading what reached the logs
    requestLogged: (urlStart) =>
      logs.some((chunk) =>
        chunk.split('\n').some((line) => {
          if (!line.includes('request completed')) return false;
          const l = JSON.parse(line) as { msg?: string; req?: { url?: string } };
          return l.msg === 'request completed' && !!l.req?.url?.startsWith(urlStart);
        }),
      ),
    options: {
      override: (b) =>
        b.overrideProvider(PARAMS_PROVIDER_TOKEN).useFactory({ factory: (c: AppConfigService, s: SecretRegistry) => loggingParams(c, sink, s), inject: [AppConfigService, SecretRegistry] }),
      setup: (app) => app.useLogger(app.get(Logger)),
    },
  };
}
