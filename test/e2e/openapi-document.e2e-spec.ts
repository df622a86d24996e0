import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { startApp, type TestApp } from '../support/app';

/** OpenAI's error type per status (the /v1 routes' error shape). */
const OPENAI_ERROR_TYPES: Record<string, string> = { 400: 'invalid_request_error', 401: 'authentication_error', 404: 'not_found_error', 409: 'invalid_request_error', 413: 'invalid_request_error', 415: 'invalid_request_error', 422: 'invalid_request_error', 429: 'rate_limit_error', 500: 'server_error', 502: 'server_error', 503: 'server_error' };
const COMMITTED = join(__dirname, '..', '..', 'docs', 'openapi.json');
const REGENERATE = 'npm run openapi';
/** The AI SDK UI message stream routes: `data:` lines only (no event names), ending `data: [DONE]`. */
const UI_STREAMS = new Set(['sendUiMessage', 'resumeUiStream']);

type Json = unknown;
type MediaType = { schema: Record<string, unknown>; example?: unknown; examples?: Record<string, { summary: string; value: Record<string, unknown> }> };
type Parameter = { name: string; in: string; required?: boolean; example?: unknown; schema?: { example?: unknown; default?: unknown } };
type Operation = {
  operationId: string;
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { content?: Record<string, MediaType> }>;
};

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
    expect(streams.map(([, , op]) => op.operationId).sort()).toEqual(['executeToolsStream', 'forkRun', 'openAiCreateChatCompletion', 'resumeTwoStageRun', 'resumeUiStream', 'sendMessage', 'sendMessageTwoStage', 'sendUiMessage', 'streamRunEvents']);
    const send = served.paths['/api/chat/messages'].post.responses['200'].content!['text/event-stream'].schema as { oneOf: Array<{ properties: { event: { enum: string[] }; data: { $ref: string } } }> };
    const events = Object.fromEntries(send.oneOf.map((o) => [o.properties.event.enum[0], o.properties.data.$ref]));
    expect(Object.keys(events)).toEqual(['start', 'phase', 'chunk', 'tool_calls', 'tool_progress', 'tool_phase', 'sources', 'notice', 'error', 'approval_required', 'approval_decided', 'paused', 'done', 'queued']);
    const done = served.components.schemas[events.done.split('/').pop()!] as { properties: Record<string, unknown>; required: string[] };
    expect(done.required).toEqual(expect.arrayContaining(['requestId', 'seq', 'phase', 'fullContent', 'messageId', 'stopReason', 'usage']));
  });

  it('describes the run\'s events as a union with a discriminator on type, one member per event of the chat streams (what code generators turn into one type per event)', () => {
    type Member = { allOf: [{ $ref: string }, { required: string[]; properties: { type: { enum: string[] } } }] };
    const union = served.components.schemas.RunEvent as { oneOf: Array<{ $ref: string }>; discriminator: { propertyName: string; mapping: Record<string, string> } };
    expect(union.discriminator.propertyName).toBe('type');
    for (const [path, method] of [['/api/chat/messages', 'post'], ['/api/chat/runs/{requestId}/events', 'get'], ['/api/chat/runs/{requestId}/fork', 'post']]) {
      const stream = served.paths[path][method].responses['200'].content!['text/event-stream'].schema as { oneOf: Array<{ properties: { event: { enum: string[] }; data: { $ref: string } } }> };
      expect(Object.keys(union.discriminator.mapping)).toEqual(stream.oneOf.map((m) => m.properties.event.enum[0]));
      for (const message of stream.oneOf) {
        const event = message.properties.event.enum[0];
        const ref = union.discriminator.mapping[event];
        expect(union.oneOf).toContainEqual({ $ref: ref });
        // the member is the event's data plus its name as `type`
        const member = served.components.schemas[ref.split('/').pop()!] as Member;
        expect(member.allOf[0]).toEqual({ $ref: message.properties.data.$ref });
        expect(member.allOf[1]).toMatchObject({ required: ['type'], properties: { type: { enum: [event] } } });
      }
    }
    const approval = served.components.schemas.ApprovalRequiredEventDto as { required: string[] };
    expect(approval.required).toEqual(expect.arrayContaining(['requestId', 'seq', 'phaseIndex', 'approvalId', 'tool', 'callId', 'arguments', 'reason']));
  });

  it('shows error examples per status and code: each example has its answer\'s status, and an operation\'s own codes where it has them', () => {
    const examplesOf = (op: Operation, status: string) => op.responses[status]?.content?.['application/json']?.examples ?? {};
    for (const [path, , op] of operations(served)) {
      if (path.startsWith('/api/health/')) continue;
      for (const [status] of Object.entries(op.responses).filter(([s]) => Number(s) >= 400)) {
        const examples = Object.values(examplesOf(op, status));
        expect([op.operationId, status, examples.length > 0]).toEqual([op.operationId, status, true]);
        // the OpenAI-compatible routes answer in OpenAI's shape, whose type follows the status
        if (path.startsWith('/v1/')) for (const e of examples) expect([op.operationId, status, (e.value.error as { type: string }).type]).toEqual([op.operationId, status, OPENAI_ERROR_TYPES[status]]);
        else for (const e of examples) expect([op.operationId, status, e.value.statusCode]).toEqual([op.operationId, status, Number(status)]);
      }
    }
    const codes = (id: string, status: string) => Object.values(examplesOf(operations(served).find(([, , o]) => o.operationId === id)![2], status)).map((e) => e.value.error);
    expect(codes('sendMessage', '400')).toEqual(['Bad Request', 'model_not_allowed', 'invalid_idempotency_key']);
    expect(codes('sendMessage', '422')).toEqual(['idempotency_key_reused']);
    expect(codes('sendMessage', '409')).toEqual(['conversation_busy', 'idempotency_key_in_use']);
    expect(codes('sendMessage', '404')).toEqual(['conversation_not_found']);
    expect(codes('listConversationMessages', '404')).toEqual(['conversation_not_found']);
    expect(codes('getRun', '404')).toEqual(['run_not_found']);
    expect(codes('sendMessageTwoStage', '404')).toEqual(['two_stage_disabled', 'conversation_not_found']);
    expect(codes('cancelRun', '409')).toEqual(['run_finished']);
    expect(codes('listTools', '401')).toEqual(['Unauthorized']);
    expect(codes('sendMessage', '429')).toEqual(['too_many_requests', 'too_many_requests']);
  });

  it('declares 413 wherever a body is taken and 429 on every keyed route', () => {
    for (const [path, , op] of operations(served)) {
      if (op.requestBody) expect([op.operationId, op.responses['413']]).toEqual([op.operationId, expect.anything()]);
      if (!path.startsWith('/api/health')) expect([op.operationId, op.responses['429']]).toEqual([op.operationId, expect.anything()]);
    }
  });

  it('has isError on every tool execution of the tool-only result', () => {
    const execution = served.components.schemas.ToolExecutionDto as { properties: Record<string, unknown>; required: string[] };
    expect(execution.properties.isError).toEqual(expect.objectContaining({ type: 'boolean' }));
    expect(execution.required).toContain('isError');
  });

  it('shows a whole run as the example of every stream (start … done; progress … result)', () => {
    for (const [, , op] of operations(served)) {
      const stream = op.responses['200']?.content?.['text/event-stream'];
      if (!stream) continue;
      if (op.operationId === 'openAiCreateChatCompletion') {
        // OpenAI's stream: data lines only, the role first, one finish_reason, then [DONE]
        const data = [...String(stream.example).matchAll(/^data: (.*)$/gm)].map((m) => m[1]);
        expect(data.at(-1)).toBe('[DONE]');
        const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { choices: Array<{ delta: { role?: string }; finish_reason: string | null }> });
        expect(chunks[0].choices[0].delta.role).toBe('assistant');
        expect(chunks.filter((c) => c.choices[0].finish_reason).length).toBe(1);
        continue;
      }
      const names = [...String(stream.example).matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
      if (UI_STREAMS.has(op.operationId)) {
        // the AI SDK UI message stream: data lines only, a part each, then [DONE]
        const parts = [...String(stream.example).matchAll(/^data: (.*)$/gm)].map((m) => m[1]);
        expect([op.operationId, names, JSON.parse(parts[0]).type, JSON.parse(parts.at(-2)!).type, parts.at(-1), parts.some((p) => p.includes('"text-delta"'))]).toEqual([op.operationId, [], 'start', 'finish', '[DONE]', true]);
        continue;
      }
      if (op.operationId === 'executeToolsStream') expect([names[0], names.at(-1)]).toEqual(['progress', 'result']);
      else expect([op.operationId, names[0], names.at(-1), names.includes('chunk')]).toEqual([op.operationId, 'start', 'done', true]);
      for (const data of String(stream.example).matchAll(/^data: (.*)$/gm)) expect(() => JSON.parse(data[1])).not.toThrow();
    }
  });

  it('every request example succeeds as it stands against the defaults (the ones that need an id of yours aside)', async () => {
    const needsYourId = new Set(['resumeTwoStageRun', 'forkRun', 'approveMcpTool', 'renameConversation', 'updateConversationSettings', 'createApiKey', 'putToolApprovals', 'decideApproval', 'configureProjectWebhook', 'putProjectRetention', 'putProjectBudget', 'putKeyBudget']);
    const tried: string[] = [];
    for (const [path, method, op] of operations(served)) {
      const example = op.requestBody?.content['application/json']?.example;
      if (!op.requestBody || needsYourId.has(op.operationId)) continue;
      expect([op.operationId, example]).toEqual([op.operationId, expect.anything()]);
      const res = await fetch(`${t.url}${path}`, { method: method.toUpperCase(), headers: { 'content-type': 'application/json' }, body: JSON.stringify(example) });
      const text = await res.text();
      // two-stage is off by default: its documented answer
      if (op.operationId === 'sendMessageTwoStage') expect([op.operationId, res.status, JSON.parse(text).error]).toEqual([op.operationId, 404, 'two_stage_disabled']);
      else expect([op.operationId, res.status]).toEqual([op.operationId, 200]);
      if (UI_STREAMS.has(op.operationId)) expect([op.operationId, res.headers.get('x-vercel-ai-ui-message-stream'), text]).toEqual([op.operationId, 'v1', expect.stringMatching(/"type":"finish"[^\n]*\n\n(id: \d+\n)?data: \[DONE\]\n\n$/)]);
      else if (res.headers.get('content-type')?.startsWith('text/event-stream')) expect(text).toMatch(/event: (done|result)\n/);
      if (op.operationId === 'openAiCreateChatCompletion') expect(JSON.parse(text)).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] });
      if (op.operationId === 'executeTools') expect(JSON.parse(text)).toMatchObject({ isSuccess: true, error: null, executions: [{ toolName: 'list_files', outcome: 'success', isError: false }] });
      tried.push(op.operationId);
    }
    expect(tried.sort()).toEqual(['executeTools', 'executeToolsStream', 'ingestKnowledge', 'openAiCreateChatCompletion', 'openAiCreateResponse', 'sendMessage', 'sendMessageTwoStage', 'sendUiMessage']);
  });

  it('gives every required path and query parameter a value, so that Execute runs with nothing typed in (issue #42)', () => {
    const missing = operations(served).flatMap(([, , op]) =>
      (op.parameters ?? []).filter((p) => (p.in === 'path' || p.in === 'query') && p.required && p.example === undefined && p.schema?.example === undefined && p.schema?.default === undefined).map((p) => `${op.operationId} ${p.in} ${p.name}`),
    );
    expect(missing).toEqual([]);
    const param = (operationId: string, name: string) => operations(served).find(([, , op]) => op.operationId === operationId)![2].parameters!.find((p) => p.name === name)!;
    expect([param('searchToolIndex', 'q').example, param('configureProjectWebhook', 'projectId').example, param('resumeUiStream', 'chatId').example]).toEqual([
      expect.any(String),
      'default',
      // the chat of the sendUiMessage example
      (operations(served).find(([, , op]) => op.operationId === 'sendUiMessage')![2].requestBody!.content['application/json'].example as { id: string }).id,
    ]);
  });

  it('no request example names a destination off this machine (issue #42)', () => {
    // every URL in a request example or a parameter example, body property examples included
    const urls = JSON.stringify(served.paths).match(/https?:\/\/[^"\s\\)`]+/g) ?? [];
    const hosts = [...new Set(urls.map((u) => new URL(u).hostname))];
    expect(hosts.filter((h) => !['127.0.0.1', 'localhost', '[::1]'].includes(h))).toEqual([]);
    expect(JSON.stringify(served.components.schemas).match(/"example":"https?:\/\/[^"]+"/g)?.filter((u) => !u.includes('127.0.0.1')) ?? []).toEqual([]);
  });

  it('describes the error body of every error answer', () => {
    for (const [path, , op] of operations(served)) {
      for (const [status, r] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const schema = r.content?.['application/json']?.schema;
        // a failing probe answers with its health report (terminus), which names the failing check
        if (path.startsWith('/api/health/')) expect([path, status, schema]).toEqual([path, status, expect.objectContaining({ properties: expect.objectContaining({ status: expect.anything(), error: expect.anything() }) })]);
        else if (path.startsWith('/v1/')) expect([path, status, schema]).toEqual([path, status, { $ref: '#/components/schemas/OpenAiErrorResponseDto' }]);
        else expect([path, status, schema]).toEqual([path, status, { $ref: '#/components/schemas/ErrorResponseDto' }]);
      }
    }
  });
});
