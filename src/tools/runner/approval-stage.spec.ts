import type { AppConfigService } from '../../config/app-config.service';
import { InMemoryTraceSink } from '../../../test/support/mcp-test-kit';
import type { ToolDefinition, ToolExecutionContext } from '../tool-definition';
import { ToolRegistryService } from '../tool-registry.service';
import { ToolRunnerService } from '../tool-runner.service';

/** The runner's approval stage (call-pipeline `approved`), decline() and checkArguments(), with real runner parts. */

function config(values: Record<string, unknown> = {}): AppConfigService {
  const all: Record<string, unknown> = { TOOL_TIMEOUT_MS: 1000, TOOL_RESULT_MAX_BYTES: 4096, LLM_API_KEY: 'sk-approval-known-secret-1234', ...values };
  return {
    get: (k: string) => all[k],
    list: (k: string) => (typeof all[k] === 'string' ? (all[k] as string).split(',').filter(Boolean) : []),
  } as unknown as AppConfigService;
}

/** A write tool as an MCP server would describe it, counting every time it really runs. */
function writeTool(executions: Array<Record<string, unknown>>): ToolDefinition {
  return {
    name: 'fs__write_file',
    description: 'writes a file',
    origin: 'mcp:fs',
    hints: { readOnly: false, destructive: true },
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' }, mode: { type: 'string', default: 'overwrite' } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    isAvailable: () => true,
    execute: async (args) => {
      executions.push(args);
      return { output: { written: args.path } };
    },
  };
}

function setup(values: Record<string, unknown> = {}) {
  const trace = new InMemoryTraceSink();
  const cfg = config(values);
  const registry = new ToolRegistryService(cfg, trace);
  const executions: Array<Record<string, unknown>> = [];
  registry.register(writeTool(executions));
  registry.register({
    name: 'read_file', description: 'reads', origin: 'builtin', parameters: { type: 'object', properties: { path: { type: 'string' } } },
    isAvailable: () => true, execute: async (args) => (executions.push(args), { output: 'text' }),
  });
  trace.events.length = 0;
  return { runner: new ToolRunnerService(registry, cfg, trace), trace, executions };
}

const ctx = (approval?: ToolExecutionContext['approval']): ToolExecutionContext => ({ projectId: 'p1', requestId: 'r1', signal: new AbortController().signal, approval });
const write = { name: 'fs__write_file', arguments: JSON.stringify({ path: 'a.txt', content: 'hi' }), callId: 'call-1' };

describe('ToolRunner approval stage', () => {
  it('a call that needs approval and has none does not run: outcome approval_required with the validated arguments and the reason', async () => {
    const { runner, executions, trace } = setup();
    const r = await runner.run(write, ctx({ setting: 'policy' }));
    expect(r).toMatchObject({ outcome: 'approval_required', isError: true, args: { path: 'a.txt', content: 'hi', mode: 'overwrite' }, approval: { required: true, reason: 'destructive' } });
    expect(executions).toHaveLength(0);
    expect(trace.ofType('tool_result').map((e) => e.details?.outcome)).toEqual(['approval_required']);
  });

  it('granted: the same call runs, once', async () => {
    const { runner, executions } = setup();
    const r = await runner.run(write, ctx({ setting: 'policy', granted: true }));
    expect(r.outcome).toBe('success');
    expect(executions).toEqual([{ path: 'a.txt', content: 'hi', mode: 'overwrite' }]);
  });

  it('without an approval context (tests, benchmarks) nothing waits', async () => {
    const { runner, executions } = setup();
    expect((await runner.run(write, ctx())).outcome).toBe('success');
    expect(executions).toHaveLength(1);
  });

  it('built-ins run under `policy` and wait under the conversation setting `always` or when configured', async () => {
    const read = { name: 'read_file', arguments: { path: 'x' } };
    const plain = setup();
    expect((await plain.runner.run(read, ctx({ setting: 'policy' }))).outcome).toBe('success');
    const always = await plain.runner.run(read, ctx({ setting: 'always' }));
    expect(always).toMatchObject({ outcome: 'approval_required', approval: { reason: 'conversation_always' } });
    expect(plain.executions).toHaveLength(1);
    const configured = setup({ TOOLS_REQUIRE_APPROVAL: 'read_*' });
    expect(await configured.runner.run(read, ctx({ setting: 'policy' }))).toMatchObject({ outcome: 'approval_required', approval: { reason: 'configured' } });
    expect(configured.executions).toHaveLength(0);
    // TOOLS_APPROVAL_DEFAULT=none: the destructive MCP tool runs unasked
    const none = setup({ TOOLS_APPROVAL_DEFAULT: 'none' });
    expect((await none.runner.run(write, ctx({ setting: 'policy' }))).outcome).toBe('success');
  });

  it('invalid arguments are a validation_error, not approval_required: nobody is asked about a call that could not run', async () => {
    const { runner, executions } = setup();
    const r = await runner.run({ name: 'fs__write_file', arguments: { path: 'a.txt' } }, ctx({ setting: 'policy' }));
    expect(r.outcome).toBe('validation_error');
    expect(r.approval).toBeUndefined();
    expect(executions).toHaveLength(0);
  });

  it('approvalNeed answers for a tool by name (unknown: not required)', async () => {
    const { runner } = setup();
    expect(await runner.approvalNeed('fs__write_file', 'p1', 'policy')).toEqual({ required: true, reason: 'destructive' });
    expect(await runner.approvalNeed('read_file', 'p1', 'policy')).toEqual({ required: false, reason: 'none' });
    expect(await runner.approvalNeed('nope', 'p1', 'always')).toEqual({ required: false, reason: 'unknown_tool' });
  });

  it('decline: answered as `denied` with the reason for the model, traced, nothing runs', async () => {
    const { runner, executions, trace } = setup();
    const r = runner.decline(write, ctx({ setting: 'policy' }), 'not this file');
    expect(r).toMatchObject({ outcome: 'denied', isError: true, output: { error: 'denied', details: { declined: true, reason: 'not this file' } } });
    expect(r.outputText).toMatch(/the user declined this call \(not this file\)/);
    expect(executions).toHaveLength(0);
    expect(trace.ofType('tool_call').map((e) => e.details?.callId)).toEqual(['call-1']);
    expect(trace.ofType('tool_result').map((e) => e.details?.outcome)).toEqual(['denied']);
  });

  it('checkArguments: the schema with defaults, a JSON object only, and no configured secret', () => {
    const { runner } = setup();
    expect(runner.checkArguments('fs__write_file', { path: 'b.txt', content: 'x' })).toEqual({ ok: true, value: { path: 'b.txt', content: 'x', mode: 'overwrite' } });
    const missing = runner.checkArguments('fs__write_file', { path: 'b.txt' });
    expect(missing.ok).toBe(false);
    expect(JSON.stringify(missing)).toMatch(/content/);
    expect(runner.checkArguments('fs__write_file', { path: 'b.txt', content: 'x', extra: 1 }).ok).toBe(false);
    expect(runner.checkArguments('fs__write_file', ['a'])).toEqual({ ok: false, errors: ['arguments must be a JSON object'] });
    expect(runner.checkArguments('nope', {})).toEqual({ ok: false, errors: ['unknown tool "nope"'] });
    expect(runner.checkArguments('fs__write_file', { path: 'b.txt', content: 'key sk-approval-known-secret-1234' })).toEqual({ ok: false, errors: ['the arguments carry a configured secret'] });
  });
});
