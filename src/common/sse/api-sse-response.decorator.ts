import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiProduces, getSchemaPath } from '@nestjs/swagger';

/** Where a stream's schema names the union its events form (read by addSseEventUnions). */
export const EVENT_UNION_KEY = 'x-event-union';

/**
 * Documents a route that answers 200 with Server-Sent Events: `text/event-stream`, and one
 * schema per event type. OpenAPI has no notion of a stream of messages, so the response schema
 * describes ONE message (`id`, `event`, `data`) as a `oneOf` over the event types, each naming
 * its `event` and the class of its `data`. With `union`, the document also gets a component of
 * that name: the events as a client holds them, `{type: <event name>, ...data}`, a `oneOf` with
 * a discriminator on `type` (see sse-event-union.ts), so code generators give one type per event.
 */
export function ApiSseResponse(options: { description: string; events: Record<string, Type<unknown>>; union?: string }): MethodDecorator {
  const entries = Object.entries(options.events);
  return applyDecorators(
    ApiExtraModels(...entries.map(([, model]) => model)),
    ApiProduces('text/event-stream'),
    ApiOkResponse({
      description: options.description,
      schema: {
        oneOf: entries.map(([event, model]) => ({
          type: 'object',
          title: event,
          required: ['event', 'data'],
          properties: {
            id: { type: 'string', description: 'the SSE id (where the stream has one: equal to data.seq)' },
            event: { type: 'string', enum: [event] },
            data: { $ref: getSchemaPath(model) },
          },
        })),
        ...(options.union ? { [EVENT_UNION_KEY]: options.union } : {}),
      },
    }),
  );
}
