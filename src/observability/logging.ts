import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule, type Params } from 'nestjs-pino';
import type { DestinationStream, Level } from 'pino';
import { AppConfigService } from '../config/app-config.service';

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
export function loggingParams(config: AppConfigService, destination?: DestinationStream): Params {
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
  return { assignResponse: true, pinoHttp: destination ? [options, destination] : options };
}

export const LoggingModule = LoggerModule.forRootAsync({
  inject: [AppConfigService],
  useFactory: (config: AppConfigService) => loggingParams(config),
});
