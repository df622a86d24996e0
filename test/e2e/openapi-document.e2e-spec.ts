import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { startApp, type TestApp } from '../support/app';

const COMMITTED = join(__dirname, '..', '..', 'docs', 'openapi.json');
const REGENERATE = 'npm run openapi';

type Json = unknown;
type Operation = { operationId: string; security?: unknown[]; responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }> };

/** JSON pointers where two documents differ (at most `limit`), to say what drifted. */
function differences(a: Json, b: Json, path = '', out: string[] = [], limit = 10): string[] {
  if (out.length >= limit || isDeepStrictEqual(a, b)) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) differences((a as Record<string, Json>)[k], (b as Record<string, Json>)[k], `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out, limit);
    return out;
  }
  out.push(path || '/');
  return out;
}

function operations(doc: { paths: Record<string, Record<string, Operation>> }): Array<[string, string, Operation]> {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]): [string, string, Operation] => [path, method, op]));
}

/** docs/openapi.json is what the app serves at /docs-json, and that document is usable as is. */
describe('the OpenAPI document', () => {
  let t: TestApp;
  let served: { paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> }; security: unknown };

  beforeAll(async () => {
    t = await startApp();
    served = await (await fetch(`${t.url}/docs-json`)).json();
  });
  afterAll(() => t?.close());

  it(`docs/openapi.json is up to date (regenerate with: ${REGENERATE})`, () => {
    const committed = JSON.parse(readFileSync(COMMITTED, 'utf8'));
    const diff = differences(committed, served);
    if (diff.length > 0) {
      throw new Error(`docs/openapi.json differs from what /docs-json serves at ${diff.join(', ')}.\nRegenerate it with: ${REGENERATE}`);
    }
  });

  it('every operation has a readable, unique id', () => {
    const ids = operations(served).map(([, , op]) => op.operationId);
    for (const id of ids) expect(id).toMatch(/^[a-z][a-zA-Z]+$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['sendMessage', 'listConversations', 'cancelRun', 'streamRunEvents', 'executeTools', 'getHealth']));
  });

  it('declares the bearer scheme for every keyed route, and none for /api/health', () => {
    expect(served.components.securitySchemes).toEqual({ bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }) });
    expect(served.security).toEqual([{ bearer: [] }]);
    const probes = ['/api/health', '/api/health/live', '/api/health/ready'];
    for (const probe of probes) expect(served.paths[probe].get.security).toEqual([]);
    for (const [path, , op] of operations(served)) if (!probes.includes(path)) expect([path, op.responses['401']]).toEqual([path, expect.anything()]);
  });

  it('documents the SSE routes as text/event-stream with a schema per event type', () => {
    const streams = operations(served).filter(([, , op]) => op.responses['200']?.content?.['text/event-stream']);
    expect(streams.map(([, , op]) => op.operationId).sort()).toEqual(['executeToolsStream', 'forkRun', 'resumeTwoStageRun', 'sendMessage', 'sendMessageTwoStage', 'streamRunEvents']);
    const send = served.paths['/api/chat/messages'].post.responses['200'].content!['text/event-stream'].schema as { oneOf: Array<{ properties: { event: { enum: string[] }; data: { $ref: string } } }> };
    const events = Object.fromEntries(send.oneOf.map((o) => [o.properties.event.enum[0], o.properties.data.$ref]));
    expect(Object.keys(events)).toEqual(['start', 'phase', 'chunk', 'tool_calls', 'tool_progress', 'tool_phase', 'sources', 'notice', 'error', 'paused', 'done']);
    const done = served.components.schemas[events.done.split('/').pop()!] as { properties: Record<string, unknown>; required: string[] };
    expect(done.required).toEqual(expect.arrayContaining(['requestId', 'seq', 'phase', 'fullContent', 'messageId', 'stopReason', 'usage']));
  });

  it('describes the error body of every error answer', () => {
    for (const [path, , op] of operations(served)) {
      for (const [status, r] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const schema = r.content?.['application/json']?.schema;
        // a failing probe answers with its health report (terminus), which names the failing check
        if (path.startsWith('/api/health/')) expect([path, status, schema]).toEqual([path, status, expect.objectContaining({ properties: expect.objectContaining({ status: expect.anything(), error: expect.anything() }) })]);
        else expect([path, status, schema]).toEqual([path, status, { $ref: '#/components/schemas/ErrorResponseDto' }]);
      }
    }
  });
});
