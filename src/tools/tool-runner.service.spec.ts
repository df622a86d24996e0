import { SecretRegistry } from '../common/secrets/secret-registry';
import type { AppConfigService } from '../config/app-config.service';
import type { TraceRecord, TraceSink } from '../trace/trace-sink.port';
import { ToolFailure, type ToolDefinition, type ToolExecutionContext, type ToolRunResult } from './tool-definition';
import { ToolRegistryService } from './tool-registry.service';
import { ToolRunnerService } from './tool-runner.service';
import { toJsonText } from './runner/json-text';
import { capJsonText, cutUtf8 } from './runner/result-cap';

/** In-memory TraceSink: collects what the runner records. */
class MemoryTraceSink implements TraceSink {
  readonly records: TraceRecord[] = [];
  record(event: TraceRecord): void {
    this.records.push(event);
  }
  async flush(): Promise<void> {}
  ofType(type: string): TraceRecord[] {
    return this.records.filter((r) => r.type === type);
  }
}

function fakeConfig(overrides: Record<string, unknown> = {}): AppConfigService {
  const values: Record<string, unknown> = {
    TOOL_TIMEOUT_MS: 1000,
    TOOL_RESULT_MAX_BYTES: 4096,
    LLM_API_KEY: 'sk-test-known-secret-123456',
    API_KEYS: undefined,
    TOOLS_ALLOW: undefined,
    TOOLS_DENY: undefined,
    ...overrides,
  };
  return {
    get: (k: string) => values[k],
    list: (k: string) => (typeof values[k] === 'string' ? (values[k] as string).split(',').filter(Boolean) : []),
  } as unknown as AppConfigService;
}

function tool(partial: Partial<ToolDefinition> & Pick<ToolDefinition, 'name'>): ToolDefinition {
  return {
    description: `${partial.name} test tool`,
    origin: 'builtin',
    parameters: { type: 'object', properties: {}, additionalProperties: true },
    isAvailable: () => true,
    execute: async () => ({ output: { ok: true } }),
    ...partial,
  };
}

const echoTool = tool({
  name: 'echo',
  parameters: {
    type: 'object',
    properties: {
      text: { type: 'string' },
      count: { type: 'integer', default: 1, minimum: 1 },
      apiToken: { type: 'string', 'x-secret': true },
    },
    required: ['text'],
    additionalProperties: false,
  },
  execute: async (args) => ({ output: { echoed: args } }),
});

function setup(tools: ToolDefinition[], config: Record<string, unknown> = {}) {
  const trace = new MemoryTraceSink();
  const cfg = fakeConfig(config);
  const registry = new ToolRegistryService(cfg, trace);
  for (const t of tools) registry.register(t);
  trace.records.length = 0; // keep only what the runner records
  const runner = new ToolRunnerService(registry, cfg, trace);
  return { runner, registry, trace };
}

function ctx(signal: AbortSignal = new AbortController().signal): ToolExecutionContext {
  return { projectId: 'proj', requestId: 'req-1', signal };
}

function expectWellFormed(r: ToolRunResult, maxBytes = 4096): void {
  expect(typeof r.outputText).toBe('string');
  expect(() => JSON.parse(r.outputText)).not.toThrow();
  expect(Buffer.byteLength(r.outputText, 'utf8')).toBeLessThanOrEqual(maxBytes);
  expect(() => JSON.stringify(r.output)).not.toThrow();
  expect(r.latencyMs).toBeGreaterThanOrEqual(0);
  expect(Array.isArray(r.sources)).toBe(true);
}

describe('ToolRunnerService', () => {
  describe('success', () => {
    it('runs a tool with validated arguments and the schema defaults applied', async () => {
      const execute = jest.fn(async (args: Record<string, unknown>) => ({ output: { got: args } }));
      const { runner } = setup([{ ...echoTool, execute }]);
      const r = await runner.run({ name: 'echo', arguments: '{"text":"hi"}', callId: 'c1' }, ctx());
      expect(r.outcome).toBe('success');
      expect(r.isError).toBe(false);
      expect(r.truncated).toBe(false);
      expect(execute).toHaveBeenCalledWith({ text: 'hi', count: 1 }, expect.objectContaining({ projectId: 'proj', requestId: 'req-1' }));
      expect(r.args).toEqual({ text: 'hi', count: 1 });
      expect(r.output).toEqual({ got: { text: 'hi', count: 1 } });
      expect(JSON.parse(r.outputText)).toEqual({ got: { text: 'hi', count: 1 } });
      expect(r.signature).toBe(runner.signature({ name: 'echo', arguments: { count: 1, text: 'hi' } }, 'proj'));
      expectWellFormed(r);
    });

    it('accepts arguments given as an object and does not let the tool change the reported args', async () => {
      const { runner } = setup([{ ...echoTool, execute: async (args) => { args.text = 'mutated'; return { output: 1 }; } }]);
      const r = await runner.run({ name: 'echo', arguments: { text: 'x', count: 2 } }, ctx());
      expect(r.outcome).toBe('success');
      expect(r.args).toEqual({ text: 'x', count: 2 });
    });

    it('reads "" as {} (models send it for calls without arguments)', async () => {
      const { runner } = setup([tool({ name: 'noargs' })]);
      for (const raw of ['', '   ']) {
        const r = await runner.run({ name: 'noargs', arguments: raw }, ctx());
        expect(r.outcome).toBe('success');
        expect(r.args).toEqual({});
      }
    });

    it('passes sources through, and a result the tool marks as an error is an exception-class outcome', async () => {
      const sources = [{ type: 'web' as const, title: 'T', url: 'https://example.org' }];
      const { runner } = setup([tool({ name: 'src', execute: async () => ({ output: 'x', sources, isError: true }) })]);
      const r = await runner.run({ name: 'src', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('exception');
      expect(r.isError).toBe(true);
      expect(r.output).toBe('x');
      expect(r.sources).toEqual(sources);
    });

    it('forwards progress reports and survives a throwing progress listener', async () => {
      const seen: string[] = [];
      const { runner } = setup([tool({
        name: 'prog',
        execute: async (_a, c) => {
          c.progress?.({ stage: 'one', message: 'first' });
          c.progress?.({ stage: 'two', message: 'second' });
          return { output: 'done' };
        },
      })]);
      const r = await runner.run({ name: 'prog', arguments: '' }, {
        ...ctx(),
        progress: (p) => {
          seen.push(p.stage);
          throw new Error('listener broke');
        },
      });
      expect(r.outcome).toBe('success');
      expect(seen).toEqual(['one', 'two']);
    });
  });

  describe('validation_error', () => {
    it.each(['[1]', '"x"', 'null', '42', 'true', '{"text":"hi"', '{text: 1}', '{"a":1} trailing'])('refuses arguments %s without running the tool', async (raw) => {
      const execute = jest.fn(async () => ({ output: 1 }));
      const { runner } = setup([{ ...echoTool, execute }]);
      const r = await runner.run({ name: 'echo', arguments: raw }, ctx());
      expect(r.outcome).toBe('validation_error');
      expect(r.isError).toBe(true);
      expect(r.signature).toBeNull();
      expect(r.args).toBe(raw);
      expect(execute).not.toHaveBeenCalled();
      expect((r.output as { message: string }).message).toMatch(/JSON/);
      expectWellFormed(r);
    });

    it.each([[null], [[1, 2]], [undefined], [42]])('refuses non-object argument values (%p)', async (raw) => {
      const { runner } = setup([echoTool]);
      const r = await runner.run({ name: 'echo', arguments: raw as unknown as string }, ctx());
      expect(r.outcome).toBe('validation_error');
      expect(r.signature).toBeNull();
    });

    it('refuses absurdly deep arguments instead of overflowing the stack', async () => {
      const { runner } = setup([tool({ name: 'any' })]);
      const deep = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
      const r = await runner.run({ name: 'any', arguments: deep }, ctx());
      expect(r.outcome).toBe('validation_error');
      expect((r.output as { message: string }).message).toMatch(/nested/);
    });

    it('names the available tools when the tool is unknown', async () => {
      const { runner } = setup([echoTool, tool({ name: 'other' }), tool({ name: 'off', isAvailable: () => false })]);
      const r = await runner.run({ name: 'nope', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('validation_error');
      const out = r.output as { message: string; details: { availableTools: string[] } };
      expect(out.message).toContain('unknown tool "nope"');
      expect(out.details.availableTools).toEqual(['echo', 'other']);
      expect(r.outputText).toContain('echo, other');
    });

    it('returns ajv messages and the schema so the model can repair the call', async () => {
      const execute = jest.fn(async () => ({ output: 1 }));
      const { runner } = setup([{ ...echoTool, execute }]);
      const r = await runner.run({ name: 'echo', arguments: '{"count":"2","extra":true}' }, ctx());
      expect(r.outcome).toBe('validation_error');
      expect(execute).not.toHaveBeenCalled();
      const out = r.output as { message: string; details: { errors: string[]; parameters: unknown } };
      expect(out.details.errors).toEqual(expect.arrayContaining([
        "(root) must have required property 'text'",
        '/count must be integer',
        '(root) must NOT have additional properties (unexpected property "extra")',
      ]));
      expect(out.details.parameters).toEqual(echoTool.parameters);
      expect(r.outputText).toContain('must be integer');
      expect(r.outputText).toContain('"required":["text"]');
      expect(r.signature).not.toBeNull(); // a well-formed object still has a signature (duplicate detection)
    });

    it('does not coerce types', async () => {
      const { runner } = setup([echoTool]);
      const r = await runner.run({ name: 'echo', arguments: '{"text":5}' }, ctx());
      expect(r.outcome).toBe('validation_error');
    });
  });

  describe('unavailable', () => {
    it.each([
      ['returns false', () => false],
      ['resolves false', async () => false],
      ['throws', () => { throw new Error('boom'); }],
      ['rejects', () => Promise.reject(new Error('boom'))],
    ])('when isAvailable() %s', async (_label, isAvailable) => {
      const execute = jest.fn(async () => ({ output: 1 }));
      const { runner } = setup([tool({ name: 't', isAvailable: isAvailable as () => boolean, execute })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('unavailable');
      expect(execute).not.toHaveBeenCalled();
    });

    it('when the schema does not compile, compiling it once per definition', async () => {
      const bad = tool({ name: 'bad', parameters: { type: 'object', properties: { a: { type: 'no-such-type' } } } });
      const { runner } = setup([bad, tool({ name: 'good' })]);
      const validator = (runner as unknown as { validator: { compilations: number } }).validator;
      const r1 = await runner.run({ name: 'bad', arguments: '{}' }, ctx());
      const r2 = await runner.run({ name: 'bad', arguments: '{"a":1}' }, ctx());
      expect(r1.outcome).toBe('unavailable');
      expect(r2.outcome).toBe('unavailable');
      expect((r1.output as { message: string }).message).toMatch(/does not compile/);
      const before = validator.compilations;
      await runner.run({ name: 'good', arguments: '{}' }, ctx());
      await runner.run({ name: 'good', arguments: '{}' }, ctx());
      expect(validator.compilations).toBe(before + 1);
      expect((await runner.specs()).map((s) => s.name)).toEqual(['good']); // never offered to a model
    });

    it('understands draft 2020-12 and unknown $schema dialects', async () => {
      const t2020 = tool({ name: 'd2020', parameters: { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: 'https://example.com/same-id.json', type: 'object', properties: { n: { type: 'integer', default: 3 } } } });
      const t04 = tool({ name: 'd04', parameters: { $schema: 'http://json-schema.org/draft-04/schema#', $id: 'https://example.com/same-id.json', type: 'object', properties: { n: { type: 'integer', default: 4 } } } });
      const { runner } = setup([t2020, t04]);
      const a = await runner.run({ name: 'd2020', arguments: '{}' }, ctx());
      const b = await runner.run({ name: 'd04', arguments: '{}' }, ctx());
      expect([a.outcome, b.outcome]).toEqual(['success', 'success']);
      expect([a.args, b.args]).toEqual([{ n: 3 }, { n: 4 }]);
    });
  });

  describe('timeout and cancellation', () => {
    it('aborts the tool signal when the per-tool timeout elapses', async () => {
      let seen: AbortSignal | undefined;
      const { runner } = setup([tool({
        name: 'slow',
        timeoutMs: 50,
        execute: (_a, c) => {
          seen = c.signal;
          return new Promise((_, reject) => c.signal.addEventListener('abort', () => reject(c.signal.reason)));
        },
      })]);
      const r = await runner.run({ name: 'slow', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('timeout');
      expect(seen?.aborted).toBe(true);
      expect((r.output as { message: string }).message).toContain('timed out after 50 ms');
    });

    it('uses TOOL_TIMEOUT_MS when the tool sets none, and abandons a tool that ignores its signal', async () => {
      const { runner } = setup([tool({ name: 'hang', execute: () => new Promise(() => undefined) })], { TOOL_TIMEOUT_MS: 80 });
      // the tool never settles: an outcome at all means the runner gave up on it, at TOOL_TIMEOUT_MS
      const r = await runner.run({ name: 'hang', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('timeout');
      expect((r.output as { message: string }).message).toContain('timed out after 80 ms');
    });

    it('classifies a caller abort during execution as outcome "cancelled" (not a tool failure)', async () => {
      const caller = new AbortController();
      let toolSignal: AbortSignal | undefined;
      const { runner } = setup([tool({
        name: 'long',
        execute: (_a, c) => {
          toolSignal = c.signal;
          setTimeout(() => caller.abort(), 20);
          return new Promise(() => undefined);
        },
      })]);
      const r = await runner.run({ name: 'long', arguments: '{}' }, ctx(caller.signal));
      expect(r.outcome).toBe('cancelled');
      expect((r.output as { message: string }).message).toBe('cancelled');
      expect(toolSignal?.aborted).toBe(true);
    });

    it('does not run a tool when the caller already aborted', async () => {
      const caller = new AbortController();
      caller.abort();
      const execute = jest.fn(async () => ({ output: 1 }));
      const { runner } = setup([tool({ name: 't', execute })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx(caller.signal));
      expect(r.outcome).toBe('cancelled');
      expect((r.output as { message: string }).message).toBe('cancelled');
      expect(execute).not.toHaveBeenCalled();
    });

    it('does not leave listeners on the caller signal', async () => {
      const caller = new AbortController();
      const add = jest.spyOn(caller.signal, 'addEventListener');
      const remove = jest.spyOn(caller.signal, 'removeEventListener');
      const { runner } = setup([tool({ name: 't' })]);
      for (let i = 0; i < 5; i++) await runner.run({ name: 't', arguments: '{}' }, ctx(caller.signal));
      expect(remove).toHaveBeenCalledTimes(add.mock.calls.length);
    });
  });

  describe('classification of failures', () => {
    it.each([
      ['validation_error', 'not found'],
      ['unavailable', 'backend down'],
      ['rate_limited', 'slow down'],
      ['timeout', 'upstream timed out'],
      ['exception', 'broke'],
    ] as const)('a thrown ToolFailure(%s) keeps its outcome', async (outcome, message) => {
      const { runner } = setup([tool({ name: 't', execute: async () => { throw new ToolFailure(outcome, message, { hint: 1 }); } })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.outcome).toBe(outcome);
      expect(r.output).toEqual({ error: outcome, message, details: { hint: 1 } });
    });

    it.each([
      ['status 429', Object.assign(new Error('too many'), { status: 429 })],
      ['statusCode 429', Object.assign(new Error('too many'), { statusCode: 429 })],
      ['response.status 429', Object.assign(new Error('too many'), { response: { status: 429 } })],
      ['name RateLimitError', Object.assign(new Error('too many'), { name: 'RateLimitError' })],
    ])('an error with %s is rate_limited', async (_label, err) => {
      const { runner } = setup([tool({ name: 't', execute: async () => { throw err; } })]);
      expect((await runner.run({ name: 't', arguments: '{}' }, ctx())).outcome).toBe('rate_limited');
    });

    it('any other error is an exception with its message and no stack', async () => {
      const { runner } = setup([tool({ name: 't', execute: async () => { throw new TypeError('cannot read x of undefined'); } })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('exception');
      expect(r.output).toEqual({ error: 'exception', message: 'cannot read x of undefined' });
      expect(r.outputText).not.toMatch(/at .*\.ts:\d+/);
    });

    it('redacts known secrets from error messages', async () => {
      const { runner } = setup([tool({ name: 't', execute: async () => { throw new Error('auth failed for sk-test-known-secret-123456'); } })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.outputText).not.toContain('sk-test-known-secret-123456');
    });
  });

  describe('never throws', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    const weird = Object.create(null) as object;
    const cases: Array<[string, ToolDefinition['execute'], string]> = [
      ['throws a string', async () => { throw 'plain string'; }, 'exception'],
      ['throws a number', async () => { throw 42; }, 'exception'],
      ['throws null', async () => { throw null; }, 'exception'],
      ['throws undefined', async () => { throw undefined; }, 'exception'],
      ['throws a prototype-less object', async () => { throw weird; }, 'exception'],
      ['throws a symbol', async () => { throw Symbol('s'); }, 'exception'],
      ['throws an object whose toString throws', async () => { throw { toString() { throw new Error('nope'); } }; }, 'exception'],
      ['throws synchronously', (() => { throw new Error('sync'); }) as unknown as ToolDefinition['execute'], 'exception'],
      ['returns undefined', (async () => undefined) as unknown as ToolDefinition['execute'], 'exception'],
      ['returns a non-object', (async () => 'just text') as unknown as ToolDefinition['execute'], 'exception'],
      ['returns a plain value synchronously', (() => ({ output: 'sync ok' })) as unknown as ToolDefinition['execute'], 'success'],
      ['returns a circular output', async () => ({ output: circular }), 'success'],
      ['returns a BigInt', async () => ({ output: { n: 10n } }), 'success'],
      ['returns undefined output', async () => ({ output: undefined }), 'success'],
      ['returns a function output', async () => ({ output: () => 1 }), 'success'],
      ['returns an output whose getter throws', async () => ({ output: { get bad() { throw new Error('getter'); }, ok: 1 } }), 'success'],
      ['returns an output whose toJSON throws', async () => ({ output: { toJSON() { throw new Error('toJSON'); } } }), 'success'],
      ['returns sources that are not an array', async () => ({ output: 1, sources: 'nope' as unknown as [] }), 'success'],
    ];
    it.each(cases)('when the tool %s', async (_label, execute, outcome) => {
      const { runner, trace } = setup([tool({ name: 't', execute })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.outcome).toBe(outcome);
      expectWellFormed(r);
      expect(trace.ofType('tool_result')).toHaveLength(1);
    });

    it('replaces cycles in the output', async () => {
      const { runner } = setup([tool({ name: 't', execute: async () => ({ output: circular }) })]);
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.output).toEqual({ a: 1, self: '[Circular]' });
    });

    it('when the trace sink throws', async () => {
      const { runner, trace } = setup([tool({ name: 't' })]);
      trace.record = () => { throw new Error('sink down'); };
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('success');
    });

    it('when the call itself is malformed', async () => {
      const { runner } = setup([tool({ name: 't' })]);
      const r = await runner.run(null as unknown as { name: string; arguments: string }, ctx());
      expect(r.outcome).toBe('validation_error');
      const r2 = await runner.run({ name: 't', arguments: '{}' }, undefined as unknown as ToolExecutionContext);
      expect(['success', 'exception']).toContain(r2.outcome);
    });

    it('when isAvailable() never answers', async () => {
      jest.useFakeTimers({ doNotFake: ['performance', 'queueMicrotask', 'nextTick', 'setImmediate'] });
      try {
        const { runner } = setup([tool({ name: 't', isAvailable: () => new Promise<boolean>(() => undefined) as unknown as boolean })]);
        const pending = runner.run({ name: 't', arguments: '{}' }, ctx());
        await jest.advanceTimersByTimeAsync(6000);
        expect((await pending).outcome).toBe('unavailable');
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('result cap', () => {
    it('caps the output at TOOL_RESULT_MAX_BYTES, says so, and stays valid JSON', async () => {
      const big = 'é'.repeat(10_000) + '😀'.repeat(5000);
      const { runner, trace } = setup([tool({ name: 'big', execute: async () => ({ output: { text: big } }) })], { TOOL_RESULT_MAX_BYTES: 2048 });
      const r = await runner.run({ name: 'big', arguments: '{}' }, ctx());
      expect(r.outcome).toBe('success');
      expect(r.truncated).toBe(true);
      expectWellFormed(r, 2048);
      const parsed = JSON.parse(r.outputText) as { truncated: boolean; note: string; partial: string; originalBytes: number };
      expect(parsed.truncated).toBe(true);
      expect(parsed.note).toMatch(/truncated/i);
      expect(parsed.originalBytes).toBe(Buffer.byteLength(JSON.stringify({ text: big })));
      expect(parsed.partial.startsWith('{"text":"éé')).toBe(true);
      expect(parsed.partial).not.toContain('\uFFFD');
      expect(r.output).toEqual(parsed);
      const result = trace.ofType('tool_result')[0].details!;
      expect(result).toMatchObject({ truncated: true, outputBytes: parsed.originalBytes });
      // issue 43: the trace's copy (2 KiB here, under its 4 KiB cut) was not cut, and says so
      expect(result.traceOutputCut).toBe(false);
    });

    it('says when the trace copy of an output was cut for size (issue 43)', async () => {
      const { runner, trace } = setup([tool({ name: 'big', execute: async () => ({ output: { text: 'x'.repeat(20_000) } }) })], { TOOL_RESULT_MAX_BYTES: 16_384 });
      await runner.run({ name: 'big', arguments: '{}' }, ctx());
      const result = trace.ofType('tool_result')[0].details!;
      expect(result.traceOutputCut).toBe(true);
      expect(String(result.output)).toMatch(/\[trace copy cut at 4096 bytes\]$/);
    });

    it('keeps the cap when escaping inflates the text', () => {
      const text = JSON.stringify('"\\\u0001'.repeat(5000));
      const capped = capJsonText(text, 1024);
      expect(capped.truncated).toBe(true);
      expect(Buffer.byteLength(capped.text)).toBeLessThanOrEqual(1024);
      expect(() => JSON.parse(capped.text)).not.toThrow();
    });

    it('cuts UTF-8 only on character boundaries', () => {
      const s = 'a😀é中';
      for (let n = 0; n <= Buffer.byteLength(s); n++) {
        const cut = cutUtf8(s, n);
        expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(n);
        expect(s.startsWith(cut)).toBe(true);
        expect(cut).not.toContain('\uFFFD');
      }
    });

    it('serializes anything', () => {
      expect(toJsonText(undefined).text).toBe('null');
      expect(toJsonText({ a: 1n }).text).toBe('{"a":"1"}');
      expect(toJsonText({ a: NaN, b: Infinity }).text).toBe('{"a":null,"b":null}');
    });
  });

  describe('traces', () => {
    it('records tool_call before tool_result with ids and without secrets', async () => {
      const secretEcho = tool({
        ...echoTool,
        execute: async (args) => ({ output: { echoedToken: `token was ${String(args.apiToken)}`, auth: 'Bearer abcdefghijklmnop' } }),
      });
      const { runner, trace } = setup([secretEcho]);
      const r = await runner.run({
        name: 'echo',
        callId: 'call_7',
        arguments: JSON.stringify({ text: 'hi', apiToken: 'super-secret-value', count: 2 }),
      }, ctx());
      expect(r.outcome).toBe('success');
      expect(trace.records.map((t) => t.type)).toEqual(['tool_call', 'tool_result']);
      const [call, result] = trace.records;
      expect(call).toMatchObject({ requestId: 'req-1', projectId: 'proj' });
      expect(call.details).toMatchObject({ name: 'echo', callId: 'call_7', args: { text: 'hi', apiToken: '[REDACTED]', count: 2 } });
      expect(result).toMatchObject({ requestId: 'req-1', projectId: 'proj' });
      expect(result.details).toMatchObject({ name: 'echo', callId: 'call_7', outcome: 'success', truncated: false, isError: false });
      expect(typeof result.details!.latencyMs).toBe('number');
      expect(result.details!.outputBytes).toBe(Buffer.byteLength(r.outputText));
      const all = JSON.stringify(trace.records);
      expect(all).not.toContain('super-secret-value');
      expect(all).not.toContain('abcdefghijklmnop');
      // the model still gets what the tool returned
      expect(r.outputText).toContain('super-secret-value');
    });

    it('redacts secret-looking keys, bearer tokens and known keys in args, also for unknown tools and unparseable args', async () => {
      const { runner, trace } = setup([tool({ name: 't' })]);
      await runner.run({ name: 't', arguments: '{"password":"hunter22","q":"Bearer abcdefghijklmnop","k":"sk-test-known-secret-123456"}' }, ctx());
      await runner.run({ name: 'missing', arguments: '{"api_key":"abcdef123456"}' }, ctx());
      await runner.run({ name: 't', arguments: '{"token":"abcdef123456", broken' }, ctx());
      const all = JSON.stringify(trace.records);
      for (const secret of ['hunter22', 'abcdefghijklmnop', 'sk-test-known-secret-123456', 'abcdef123456']) expect(all).not.toContain(secret);
      expect(trace.ofType('tool_call')).toHaveLength(3);
      expect(trace.ofType('tool_result')).toHaveLength(3);
    });

    it('caps the output kept in the trace to a few KB', async () => {
      const { runner, trace } = setup([tool({ name: 't', execute: async () => ({ output: 'x'.repeat(60_000) }) })], { TOOL_RESULT_MAX_BYTES: 100_000 });
      const r = await runner.run({ name: 't', arguments: '{}' }, ctx());
      expect(r.truncated).toBe(false);
      const out = trace.ofType('tool_result')[0].details!.output as string;
      expect(typeof out).toBe('string');
      expect(Buffer.byteLength(out)).toBeLessThan(4096 + 100);
    });

    it('generates a callId when the model gave none, the same in both records', async () => {
      const { runner, trace } = setup([tool({ name: 't' })]);
      await runner.run({ name: 't', arguments: '{}' }, ctx());
      const [call, result] = trace.records;
      expect(call.details!.callId).toEqual(expect.any(String));
      expect(result.details!.callId).toBe(call.details!.callId);
    });
  });

  describe('specs() and signature()', () => {
    it('lists available tools as LlmToolSpec, optionally filtered by name', async () => {
      const { runner } = setup([echoTool, tool({ name: 'b' }), tool({ name: 'off', isAvailable: () => false })]);
      const specs = await runner.specs();
      expect(specs.map((s) => s.name)).toEqual(['b', 'echo']);
      expect(specs.find((s) => s.name === 'echo')).toEqual({ name: 'echo', description: echoTool.description, parameters: echoTool.parameters });
      expect((await runner.specs({ names: ['echo', 'off'] })).map((s) => s.name)).toEqual(['echo']);
    });

    it('gives every turn the same frozen spec per tool, and a new one when the definition changes', async () => {
      const changing = tool({ name: 'b', description: 'first' });
      const { runner } = setup([echoTool, changing]);
      const [first, second] = [await runner.specs(), await runner.specs()];
      expect(second[0]).toBe(first[0]);
      expect(second[1]).toBe(first[1]);
      expect(Object.isFrozen(first[0])).toBe(true);
      Object.assign(changing, { description: 'second' });
      const third = await runner.specs();
      expect(third[0]).toEqual({ name: 'b', description: 'second', parameters: changing.parameters });
      expect(third[1]).toBe(first[1]);
    });

    it('gives one signature for key order, spacing and omitted defaults; null for non-objects', () => {
      const { runner } = setup([echoTool]);
      const a = runner.signature({ name: 'echo', arguments: '{"text":"a","count":1}' }, 'p');
      expect(runner.signature({ name: 'echo', arguments: '{ "count": 1,\n "text": "a" }' }, 'p')).toBe(a);
      expect(runner.signature({ name: 'echo', arguments: '{"text":"a"}' }, 'p')).toBe(a);
      expect(runner.signature({ name: 'echo', arguments: { text: 'a' } }, 'p')).toBe(a);
      expect(runner.signature({ name: 'echo', arguments: '{"text":"a","count":2}' }, 'p')).not.toBe(a);
      expect(runner.signature({ name: 'echo', arguments: '{"text":"a"}' }, 'q')).not.toBe(a);
      expect(runner.signature({ name: 'echo', arguments: '[1]' }, 'p')).toBeNull();
      expect(runner.signature({ name: 'echo', arguments: '{"text":' }, 'p')).toBeNull();
    });

    it('masks x-secret arguments for display', () => {
      const { runner } = setup([echoTool]);
      expect(runner.redactArgs('echo', { text: 'a', apiToken: 'abc12345' })).toEqual({ text: 'a', apiToken: '[REDACTED]' });
    });

    it('masks the x-secret properties of the schema a tool has now, after it was registered again with another', () => {
      const { runner, registry } = setup([echoTool]);
      expect(runner.redactArgs('echo', { text: 'a', pin: '1234' })).toEqual({ text: 'a', pin: '1234' });
      registry.register(tool({ name: 'echo', parameters: { type: 'object', properties: { text: { type: 'string' }, pin: { type: 'string', 'x-secret': true } } } }));
      expect(runner.redactArgs('echo', { text: 'a', pin: '1234', apiToken: 'abc12345' })).toEqual({ text: 'a', pin: '[REDACTED]', apiToken: 'abc12345' });
    });
  });
});

describe('ToolRunnerService.repeatPolicy (issue 13)', () => {
  it('is refuse by default, the tool’s own policy when it has one, and rerun for every name in TOOLS_RERUN', () => {
    const { runner } = setup([tool({ name: 'plain' }), tool({ name: 'poll', repeat: 'rerun' }), tool({ name: 'strict', repeat: 'refuse' })], { TOOLS_RERUN: 'strict,unknown' });
    expect(runner.repeatPolicy('plain')).toBe('refuse');
    expect(runner.repeatPolicy('poll')).toBe('rerun');
    expect(runner.repeatPolicy('strict')).toBe('rerun');
    expect(runner.repeatPolicy('missing')).toBe('refuse');
  });
});

describe('ToolRunnerService.readOnly (issue 44: what a takeover may run again)', () => {
  it('is true for built-ins and MCP tools annotated readOnlyHint, false for other MCP tools and unknown names', () => {
    const { runner } = setup([
      tool({ name: 'read' }),
      tool({ name: 'mcp_read', origin: 'mcp:s', hints: { readOnly: true } }),
      tool({ name: 'mcp_write', origin: 'mcp:s', hints: { readOnly: false } }),
      tool({ name: 'mcp_silent', origin: 'mcp:s' }),
    ]);
    expect(['read', 'mcp_read', 'mcp_write', 'mcp_silent', 'missing'].map((n) => runner.readOnly(n))).toEqual([true, true, false, false, false]);
  });
});

describe('ToolRunnerService: calls refused by policy', () => {
  it('refuses a call carrying a configured secret (also one added to the registry later) before the tool runs, and never names it', async () => {
    let ran = 0;
    const spy = tool({ name: 'send', execute: async () => ((ran += 1), { output: { sent: true } }) });
    const trace = new MemoryTraceSink();
    const cfg = fakeConfig();
    const registry = new ToolRegistryService(cfg, trace);
    registry.register(spy);
    const secrets = SecretRegistry.fromConfig(cfg);
    const runner = new ToolRunnerService(registry, cfg, trace, secrets);
    secrets.set('mcp:remote', ['Bearer later-added-token-42']);
    for (const value of ['sk-test-known-secret-123456', 'later-added-token-42']) {
      const r = await runner.run({ name: 'send', arguments: { url: `https://x.example/?k=${value}` } }, ctx());
      expect(r).toMatchObject({ outcome: 'validation_error', isError: true, output: { details: { refused: 'configured_secret' } } });
      expect(JSON.stringify(r.output)).not.toContain(value);
      expect(JSON.stringify(trace.records)).not.toContain(value);
    }
    expect(ran).toBe(0);
    expect(trace.ofType('tool_call_refused').map((e) => e.details?.reason)).toEqual(['configured_secret', 'configured_secret']);
  });

  it('asks the caller`s argument policy; a refusal masks what it names in the trace, a policy that throws refuses', async () => {
    let ran = 0;
    const { runner, trace } = setup([tool({ name: 'send', execute: async () => ((ran += 1), { output: { sent: true } }) })]);
    const refusing: ToolExecutionContext = { ...ctx(), argumentPolicy: (a) => (a.includes('Planted9xY') ? { reason: 'untrusted_secret', why: 'came from a tool', mask: ['Planted9xY'] } : null) };
    expect((await runner.run({ name: 'send', arguments: { q: 'Planted9xY' } }, refusing)).output).toMatchObject({ details: { refused: 'untrusted_secret' } });
    expect(JSON.stringify(trace.records)).not.toContain('Planted9xY');
    expect((await runner.run({ name: 'send', arguments: { q: 'fine' } }, refusing)).outcome).toBe('success');
    const broken: ToolExecutionContext = { ...ctx(), argumentPolicy: () => { throw new Error('boom'); } };
    expect((await runner.run({ name: 'send', arguments: { q: 'x' } }, broken)).output).toMatchObject({ details: { refused: 'policy_error' } });
    expect(ran).toBe(1);
  });

  it('masks a registry value a tool returns before the model gets it', async () => {
    const { runner } = setup([tool({ name: 'leak', execute: async () => ({ output: { text: 'key is sk-test-known-secret-123456 ok' } }) })]);
    const r = await runner.run({ name: 'leak', arguments: {} }, ctx());
    expect(r.outputText).toBe('{"text":"key is [REDACTED] ok"}');
  });
});
