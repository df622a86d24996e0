import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiProduces, getSchemaPath } from '@nestjs/swagger';

/**
 * Documents a route that answers 200 with Server-Sent Events: `text/event-stream`, and one
 * schema per event type. OpenAPI has no notion of a stream of messages, so the response schema
 * describes ONE message (`id`, `event`, `data`) as a `oneOf` over the event types, each naming
 * its `event` and the class of its `data`.
 */
export function ApiSseResponse(options: { description: string; events: Record<string, Type<unknown>> }): MethodDecorator {
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
      },
    }),
  );
}
