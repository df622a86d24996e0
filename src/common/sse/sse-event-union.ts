import type { OpenAPIObject } from '@nestjs/swagger';
import { EVENT_UNION_KEY } from './api-sse-response.decorator';

type Schema = Record<string, unknown>;
type Message = { properties: { event: { enum: [string] }; data: { $ref: string } } };

/** `tool_progress` → `ToolProgress`: the member's name after its union's (`RunEventToolProgress`). */
const pascal = (event: string) => event.replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());

/**
 * Adds, for every stream documented with `ApiSseResponse({union})`, the union of its events as
 * a client holds them: one component per event (`<union><Event>`: its `data` schema plus `type`,
 * the SSE event name) and the union itself, a `oneOf` with a discriminator on `type`. The wire
 * is unchanged (`type` is the SSE `event` field, not a member of `data`); this is what clients
 * generated from the document (clients/typescript) switch over. Built from the stream's own
 * message schema, so a new entry in the route's events appears here with nothing else to edit.
 */
export function addSseEventUnions(doc: OpenAPIObject): void {
  const schemas = (doc.components ??= {}).schemas ??= {};
  const built = new Map<string, string>();
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item) as Array<{ responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> }>) {
      const stream = op?.responses?.['200']?.content?.['text/event-stream']?.schema;
      const name = stream?.[EVENT_UNION_KEY];
      if (typeof name !== 'string') continue;
      const messages = stream!.oneOf as Message[];
      const members = messages.map((m) => [m.properties.event.enum[0], m.properties.data.$ref] as const);
      const signature = JSON.stringify(members);
      if (built.has(name)) {
        if (built.get(name) !== signature) throw new Error(`two streams name the event union ${name} with different events`);
        continue;
      }
      built.set(name, signature);
      const mapping: Record<string, string> = {};
      for (const [event, data] of members) {
        const member = `${name}${pascal(event)}`;
        schemas[member] = {
          description: `the \`${event}\` event: the SSE event name as \`type\`, then the fields of its data`,
          allOf: [{ $ref: data }, { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: [event] } } }],
        };
        mapping[event] = `#/components/schemas/${member}`;
      }
      schemas[name] = {
        description: 'One event of the stream as a client holds it: `type` (the SSE event name) and the fields of its `data`. docs/API.md, "Events".',
        oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
        discriminator: { propertyName: 'type', mapping },
      };
    }
  }
}
