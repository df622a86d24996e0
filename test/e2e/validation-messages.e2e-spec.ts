import { request as httpRequest } from 'node:http';
import { startApp, type TestApp } from '../support/app';

/**
 * Issue #42, item 6: one message per bad field, naming the field (by its whole path, once) and
 * the fix. Each bad body of the issue, on both chat routes, the fork route, a path UUID and
 * `/v1/chat/completions` (OpenAI's error shape, one error at a time), with the exact answer, and
 * nothing stored by any of them.
 */
const RUN = '0f8fad5b-d9cb-469f-a165-70867728950e';
const CHAT_ROUTES = ['/api/chat/messages', '/api/chat/messages_two_stage'];
const SEND_FIELDS = 'projectId, conversationId, content, webhookUrl, mode, options';
const OPTION_FIELDS = 'maxPhaseCycles, maxDuplicateAttempts, maxIterations, turnTokenBudget, debugShowToolResults, detach, model, approvalTimeoutMs, multitask';

/** [what, raw body, the expected `message` (an array: one per bad field; a string: the body as a whole)] */
const CHAT_CASES: Array<[string, string, string | string[]]> = [
  ['a nested enum (path once)', '{"content":"hi","options":{"multitask":"queue"}}', ['options.multitask must be one of reject, enqueue, interrupt, rollback']],
  ['two bad fields: one message each', '{"options":{"multitask":"queue"}}', ['content is required (a string)', 'options.multitask must be one of reject, enqueue, interrupt, rollback']],
  ['an empty body: the required field', '{}', ['content is required (a string)']],
  ['a number for a string: its kind, not its length', '{"content":123}', ['content must be a string']],
  ['an empty string', '{"content":""}', ['content must not be empty']],
  ['too long', JSON.stringify({ content: 'x'.repeat(32001) }), ['content must be shorter than or equal to 32000 characters']],
  ['an unknown nested field', '{"content":"hi","options":{"foo":1}}', [`options.foo is not allowed (unknown field; accepted: ${OPTION_FIELDS})`]],
  ['an unknown field', '{"content":"hi","foo":1}', [`foo is not allowed (unknown field; accepted: ${SEND_FIELDS})`]],
  ['a nested integer of the wrong kind', '{"content":"hi","options":{"maxPhaseCycles":"x"}}', ['options.maxPhaseCycles must be an integer number']],
  ['a nested bound', '{"content":"hi","options":{"maxIterations":21}}', ['options.maxIterations must not be greater than 20']],
  ['a nested object that is not one', '{"content":"hi","options":"fast"}', ['options must be an object']],
  ['JSON null', 'null', 'The request body must be a JSON object (got null)'],
  ['a JSON array', '[]', 'The request body must be a JSON object (got an array)'],
  ['a JSON number', '42', 'The request body must be a JSON object (got a number)'],
];

/** The same for the fork route and a malformed id in a path. */
const OTHER_CASES: Array<[string, string, string, string, string[]]> = [
  ['fork without fromPhaseIndex', 'POST', `/api/chat/runs/${RUN}/fork`, '{}', ['fromPhaseIndex is required (an integer)']],
  ['fork from phase 0', 'POST', `/api/chat/runs/${RUN}/fork`, '{"fromPhaseIndex":0}', ['fromPhaseIndex must not be less than 1']],
  ['fork of a malformed run id', 'POST', '/api/chat/runs/not-a-uuid/fork', '{"fromPhaseIndex":2}', [`requestId must be a UUID such as ${RUN} (got "not-a-uuid")`]],
  ['a malformed run id', 'GET', '/api/chat/runs/123', '', [`requestId must be a UUID such as ${RUN} (got "123")`]],
  ['a malformed conversation id', 'DELETE', '/api/chat/conversations/nope', '', [`id must be a UUID such as ${RUN} (got "nope")`]],
  ['a malformed approval id', 'POST', `/api/chat/runs/${RUN}/approvals/x`, '{"decision":"approve"}', [`approvalId must be a UUID such as ${RUN} (got "x")`]],
  ['a required query parameter', 'GET', '/api/orchestration/tool-index/search', '', ['q is required (a string)']],
  ['a key without anything', 'POST', '/api/admin/keys', '{}', ['name is required (a string)', 'projects is required (an array)', 'role is required (one of the following values: admin, user)']],
  // a bad mode is one field among the others (alone, it keeps its code: see MODE_CASES)
  ['tool-only: a bad mode beside other bad fields', 'POST', '/api/orchestration/execute', '{"mode":"Fast","options":{"maxCalls":0}}', [
    'userInput is required (a string)',
    'mode must be one of: Classic, NarrowTopK (got "Fast")',
    'options.maxCalls must not be less than 1',
  ]],
  ['tool-only stream: a bad mode beside another bad field', 'POST', '/api/orchestration/execute/stream', '{"userInput":"","mode":"Fast"}', ['userInput must not be empty', 'mode must be one of: Classic, NarrowTopK (got "Fast")']],
  ['tool-only: no mode while ORCHESTRATION_DEFAULT_MODE is unset', 'POST', '/api/orchestration/execute', '{"userInput":"x"}', ['mode must be one of: Classic, NarrowTopK (required while ORCHESTRATION_DEFAULT_MODE is not set)']],
  ['the AI SDK route: a text part whose text is not a string', 'POST', '/api/chat/ui', '{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":42}]}]}', ['messages[0].parts[0].text must be a string (got a number)']],
  ['the AI SDK route: a part without text and a file part', 'POST', '/api/chat/ui', '{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text"},{"type":"file","url":"data:,"}]}]}', [
    'messages[0].parts[0].text is required (a string)',
    'messages[0].parts[1].type must be "text": the last user message may only have text parts (got "file")',
  ]],
  ['the AI SDK route: the last message not the user\'s', 'POST', '/api/chat/ui', '{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]},{"id":"a1","role":"assistant","parts":[{"type":"text","text":"hello"}]}]}', [
    'messages[1].role must be "user": the last of messages must be the user\'s message (got role "assistant")',
  ]],
];

/** A bad mode alone: the documented `unknown_mode`, in the shape of every validation error. [what, route, body, message] */
const MODE_CASES: Array<[string, string, string, string]> = [
  ['an unknown name', '/api/orchestration/execute', '{"userInput":"x","mode":"Fast"}', 'mode must be one of: Classic, NarrowTopK (got "Fast")'],
  ['an unknown name, on the stream', '/api/orchestration/execute/stream', '{"userInput":"x","mode":"classic"}', 'mode must be one of: Classic, NarrowTopK (got "classic")'],
  ['not a string', '/api/orchestration/execute', '{"userInput":"x","mode":3}', 'mode must be one of: Classic, NarrowTopK'],
];

/** An Idempotency-Key refused: what the message says it got. [what, header bytes, got] */
const IDEMPOTENCY_CASES: Array<[string, string, string]> = [
  ['one non-ASCII character (two UTF-8 bytes)', Buffer.from('é').toString('latin1'), '1 character, not all printable ASCII'],
  ['a Chinese word (three characters, nine bytes)', Buffer.from('幂等键').toString('latin1'), '3 characters, not all printable ASCII'],
  ['too long', 'k'.repeat(300), '300 characters'],
  ['a tab inside', 'a\tb', '3 characters, not all printable ASCII'],
];

/** `/v1/chat/completions`: OpenAI's shape, one error naming its `param`. [what, body, message, param, code] */
const OPENAI_CASES: Array<[string, string, string, string | null, string]> = [
  ['an empty body', '{}', 'model is required', 'model', 'missing_required_parameter'],
  ['no messages', '{"model":"orion-unified"}', 'messages is required', 'messages', 'missing_required_parameter'],
  ['JSON null', 'null', 'The request body must be a JSON object', null, 'invalid_body'],
  ['an unknown field', '{"model":"orion-unified","messages":[{"role":"user","content":"hi"}],"foo":1}', 'Unrecognized request argument supplied: foo', 'foo', 'unknown_parameter'],
  ['a number of the wrong kind: one message, not one per constraint', '{"model":"orion-unified","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}', 'temperature must be a number conforming to the specified constraints', 'temperature', 'invalid_value'],
];

describe('validation messages (issue #42)', () => {
  let t: TestApp;
  const send = (method: string, path: string, body: string) =>
    fetch(`${t.url}${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body || undefined });
  /** A POST whose header values go out byte for byte (fetch refuses a header that is not latin1-safe text). */
  const rawPost = (path: string, body: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = httpRequest(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      r.on('error', reject);
      // headers and a string body go out in one write, in the body's encoding: a Buffer keeps the headers latin1 (byte for byte)
      r.end(Buffer.from(body));
    });
  const conversations = async () => ((await (await fetch(`${t.url}/api/chat/conversations?projectId=default`)).json()) as unknown[]).length;

  beforeAll(async () => {
    t = await startApp({ TWO_STAGE_ENABLED: 'true' });
  });
  afterAll(() => t?.close());

  for (const route of CHAT_ROUTES) {
    it.each(CHAT_CASES)(`${route}: %s`, async (_what, body, message) => {
      const before = await conversations();
      const res = await send('POST', route, body);
      const answer = await res.json();
      expect([res.status, answer.error, answer.message]).toEqual([400, 'Bad Request', message]);
      // the per-field list says the same, with each field's path
      if (Array.isArray(message)) expect(answer.fields.map((f: { message: string }) => f.message)).toEqual(message);
      expect(await conversations()).toBe(before);
    });
  }

  it('names each field in `fields` by the path its message starts with', async () => {
    const res = await send('POST', '/api/chat/messages', '{"options":{"multitask":"queue","foo":1}}');
    expect((await res.json()).fields).toEqual([
      { field: 'content', message: 'content is required (a string)' },
      // class-validator checks an object's unknown fields before its known ones
      { field: 'options.foo', message: `options.foo is not allowed (unknown field; accepted: ${OPTION_FIELDS})` },
      { field: 'options.multitask', message: 'options.multitask must be one of reject, enqueue, interrupt, rollback' },
    ]);
  });

  it.each(OTHER_CASES)('%s', async (_what, method, path, body, message) => {
    const res = await send(method, path, body);
    const answer = await res.json();
    expect([res.status, answer.error, answer.message]).toEqual([400, 'Bad Request', message]);
    // each message again in `fields`, under the path it starts with
    expect(answer.fields).toEqual(message.map((m) => ({ field: /^[\w.[\]]+/.exec(m)![0], message: m })));
  });

  it.each(MODE_CASES)('tool-only, a bad mode alone (%s): 400 unknown_mode, one message for the field', async (_what, route, body, message) => {
    const res = await send('POST', route, body);
    expect([res.status, await res.json()]).toEqual([400, { statusCode: 400, error: 'unknown_mode', message: [message], fields: [{ field: 'mode', message }] }]);
  });

  it.each(IDEMPOTENCY_CASES)('an Idempotency-Key refused: %s', async (_what, header, got) => {
    const before = await conversations();
    const { status, body } = await rawPost('/api/chat/messages', '{"content":"hi"}', { 'idempotency-key': header });
    expect([status, JSON.parse(body)]).toEqual([400, expect.objectContaining({ error: 'invalid_idempotency_key', message: expect.stringContaining(`(got ${got})`) })]);
    expect(await conversations()).toBe(before);
  });

  it.each(OPENAI_CASES)('/v1/chat/completions: %s', async (_what, body, message, param, code) => {
    const before = await conversations();
    const res = await send('POST', '/v1/chat/completions', body);
    expect([res.status, await res.json()]).toEqual([400, { error: { message, type: 'invalid_request_error', param, code } }]);
    expect(await conversations()).toBe(before);
  });

  it('malformed JSON still says where it breaks', async () => {
    const res = await send('POST', '/api/chat/messages', '{"content": ');
    expect([res.status, (await res.json()).message]).toEqual([400, expect.stringMatching(/^Request body is not valid JSON: /)]);
  });
});
