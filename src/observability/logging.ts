import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import { LoggerModule, type Params } from 'nestjs-pino';
import { destination as pinoDestination, type DestinationStream, type Level } from 'pino';
import { AppConfigService } from '../config/app-config.service';
import { SecretRegistry } from '../common/secrets/secret-registry';

/** LOG_LEVEL keeps Nest's names; pino calls `log` info and `verbose` trace. */
const LEVELS: Record<string, Level> = { error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };

/** Probes and scrapes every few seconds would drown the turns. */
const QUIET = /^\/(metrics|api\/health)(\/|\?|$)/;

/** The URL as logged: an EventSource passes its key as ?access_token=, which never reaches a log. */
export function loggableUrl(url: string | undefined): string {
  return (url ?? '').replace(/([?&]access_token=)[^&#]*/gi, '$1[redacted]');
}

/**
 * Structured JSON logs (nestjs-pino): one object a line, with the HTTP request's id (`req.id`,
 * also sent back as X-Request-Id) on every line logged while serving it, and the turn's
 * `requestId` once the turn has started (the observability wiring assigns it). Headers are not
 * logged at all (keys, cookies). `destination` defaults to stdout.
 */
export function loggingParams(config: AppConfigService, destination?: DestinationStream, secrets: SecretRegistry = SecretRegistry.fromConfig(config)): Params {
  const options = {
    level: LEVELS[config.get('LOG_LEVEL')] ?? 'info',
    base: { service: 'orion' },
    messageKey: 'msg',
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    autoLogging: { ignore: (req: IncomingMessage) => QUIET.test(req.url ?? '') },
    serializers: {
      req: (req: { id?: unknown; method?: string; url?: string }) => ({ id: req.id, method: req.method, url: loggableUrl(req.url) }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  };
  return { assignResponse: true, pinoHttp: [options, maskingDestination(destination ?? pinoDestination(1), secrets)] };
}

/**
 * Every finished log line passes through here: a secret the registry knows (a configured key,
 * an MCP server's env or header value) is masked whatever logged it, a library's error text
 * or a server's stderr included. Values are looked for as they are and as JSON escapes them.
 */
export function maskingDestination(inner: DestinationStream, secrets: SecretRegistry): DestinationStream {
  return {
    write(line: string) {
      return inner.write(maskLogText(line, secrets));
    },
  };
}

export function maskLogText(line: string, secrets: SecretRegistry): string {
  let out = line;
  for (const v of secrets.values()) {
    const escaped = JSON.stringify(v).slice(1, -1);
    if (out.includes(v)) out = out.split(v).join('[REDACTED]');
    if (escaped !== v && out.includes(escaped)) out = out.split(escaped).join('[REDACTED]');
  }
  return out;
}

/** The plain-text logger (LOG_FORMAT=text) with the same masking as the JSON lines. */
export class MaskingConsoleLogger extends ConsoleLogger {
  constructor(
    private readonly secrets: SecretRegistry,
    logLevels: LogLevel[],
  ) {
    super({ logLevels });
  }

  protected override formatMessage(...args: Parameters<ConsoleLogger['formatMessage']>): string {
    return maskLogText(super.formatMessage(...args), this.secrets);
  }
}

export const LoggingModule = LoggerModule.forRootAsync({
  inject: [AppConfigService, SecretRegistry],
  useFactory: (config: AppConfigService, secrets: SecretRegistry) => loggingParams(config, undefined, secrets),
});
