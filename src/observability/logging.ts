import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import type { Level } from 'pino';
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
 * Structured JSON logs (nestjs-pino): one object a line, with the HTTP request's `reqId` on every
 * line logged while serving it, and the turn's `requestId` once the turn has started (the
 * observability wiring assigns it). Headers are not logged at all (keys, cookies).
 */
export const LoggingModule = LoggerModule.forRootAsync({
  inject: [AppConfigService],
  useFactory: (config: AppConfigService) => ({
    assignResponse: true,
    pinoHttp: {
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
    },
  }),
});
