import { deepMap, WALK } from '../common/util/deep-map.util';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { randomUUID } from 'node:crypto';
import { AppConfigService } from '../config/app-config.service';
import { abortReason } from '../common/util/abort.util';
import { isSecretKey, REDACTED, redactSecrets, redactString } from '../common/util/redact.util';
import type { LlmToolSpec } from '../llm/llm-adapter.port';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import {
  ToolFailure,
  type ArgumentRefusal,
  type RepeatPolicy,
  type ToolDefinition,
  type ToolExecuteResult,
  type ToolExecutionContext,
  type ToolOutcome,
  type ToolProgress,
  type ToolRunResult,
  type ToolSource,
} from './tool-definition';
import { ToolRegistryService, definitionHash } from './tool-registry.service';
import type { ToolCallRequest, ToolRunner } from './tool-runner.port';
import { JsonSchemaValidator, secretPropertyNames } from './json-schema.validator';
import { parseToolArguments, toolSignature } from './tool-signature.util';

/** Bytes of a result kept in the `tool_result` trace: enough to debug, small enough to store every call. */
export const TRACE_OUTPUT_MAX_BYTES = 4096;
/** Longest error message handed to the model (a tool may throw a whole HTML page). */
export const ERROR_MESSAGE_MAX_CHARS = 2000;
/** An `isAvailable()` that does not answer within this is read as "unavailable". */
export const AVAILABILITY_TIMEOUT_MS = 5000;

const NO_SECRET_KEYS: ReadonlySet<string> = new Set();
const OUTCOMES: ReadonlySet<string> = new Set<ToolOutcome>(['validation_error', 'unavailable', 'rate_limited', 'timeout', 'exception']);

interface CallState {
  started: number;
  name: string;
  callId: string;
  ctx: ToolExecutionContext;
  args: unknown;
  signature: string | null;
  /** the signature with secrets masked, for the trace */
  traceSignature: string | null;
  secretKeys: ReadonlySet<string>;
  secretValues: string[];
}

type Execution =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown; timedOut: boolean; cancelled: boolean };

/**
 * The only way a tool runs (the ToolRunner port). For each call it parses the arguments,
 * finds the tool, checks availability, validates with ajv (defaults applied), runs `execute`
 * under a per-tool timeout merged with the caller's signal, classifies what happened into a
 * ToolOutcome, caps the result at TOOL_RESULT_MAX_BYTES and traces `tool_call`/`tool_result`.
 *
 * `run` never throws: whatever a tool does (throws a non-Error, returns undefined or a
 * circular object, hangs forever), the caller gets a ToolRunResult.
 *
 * Cancellation: when the caller's signal aborts before or while a tool runs, the outcome is
 * `cancelled` (not `exception`: nothing went wrong with the tool, so metrics and streams must
 * not count it as a failure); protocols check their own signal and end the turn as cancelled,
 * so the model never sees this result.
 */
@Injectable()
export class ToolRunnerService implements ToolRunner {
  private readonly logger = new Logger('ToolRunner');
  private readonly validator = new JsonSchemaValidator();
  private readonly defaultTimeoutMs: number;
  private readonly maxResultBytes: number;
  private readonly secrets: SecretRegistry;
  private readonly rerun: Set<string>;
  /** `x-secret` names per schema version (secretKeysOf) */
  private readonly secretKeys = new Map<string, ReadonlySet<string>>();

  constructor(
    private readonly registry: ToolRegistryService,
    config: AppConfigService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    @Optional() secrets?: SecretRegistry,
  ) {
    this.defaultTimeoutMs = config.get('TOOL_TIMEOUT_MS');
    this.maxResultBytes = config.get('TOOL_RESULT_MAX_BYTES');
    this.secrets = secrets ?? SecretRegistry.fromConfig(config);
    this.rerun = new Set(config.list('TOOLS_RERUN'));
  }

  /** TOOLS_RERUN first, then the tool's own policy, else `refuse`. */
  repeatPolicy(name: string): RepeatPolicy {
    if (this.rerun.has(name)) return 'rerun';
    return this.registry.get(name)?.repeat ?? 'refuse';
  }

  async run(call: ToolCallRequest, ctx: ToolExecutionContext): Promise<ToolRunResult> {
    const started = performance.now();
    const name = typeof call?.name === 'string' ? call.name : String(call?.name);
    try {
      return await this.runChecked(call, ctx, started, name);
    } catch (err) {
      // only a bug in this class gets here; still answer, never throw
      this.logger.error(`runner failed on ${name}: ${errorMessage(err)}`);
      const message = 'internal error while running the tool';
      return {
        toolName: name, args: call?.arguments, outcome: 'exception', output: { error: 'exception', message },
        outputText: JSON.stringify({ error: 'exception', message }), truncated: false, isError: true,
        latencyMs: Math.round(performance.now() - started), sources: [], signature: null,
      };
    }
  }

  signature(call: ToolCallRequest, projectId: string): string | null {
    try {
      const parsed = parseToolArguments(call.arguments);
      if (!parsed.ok) return null;
      const def = this.registry.get(call.name);
      if (def) this.validator.validate(def.parameters, parsed.value, this.cacheKey(def)); // defaults only
      return toolSignature({ name: call.name, action: def?.action, args: parsed.value, projectId });
    } catch {
      return null;
    }
  }

  async specs(filter?: { names?: string[] }): Promise<LlmToolSpec[]> {
    const wanted = filter?.names ? new Set(filter.names) : null;
    const tools = await this.availableTools();
    return tools
      .filter((t) => !wanted || wanted.has(t.name))
      // a tool whose schema cannot compile could never run: do not offer it
      .filter((t) => this.validator.compile(t.parameters, this.cacheKey(t)).ok)
      .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  }

  /** Arguments as they may appear in logs or streams: `x-secret` properties and secret-looking keys masked. */
  redactArgs(name: string, args: unknown): unknown {
    const def = this.registry.get(name);
    return redactSecrets(args, this.secrets.values(), this.secretKeysOf(def));
  }

  /**
   * The `x-secret` property names of a tool's schema, found once per schema version: the same
   * key as the validator's compiled schema (the registry's hash of the definition), so the
   * names always belong to the schema the arguments are validated against. Asked several times
   * per call (the trace, the shown arguments, each progress event), a walk of the schema each.
   */
  private secretKeysOf(def: ToolDefinition | undefined): ReadonlySet<string> {
    if (!def) return NO_SECRET_KEYS;
    const key = this.cacheKey(def);
    let names = this.secretKeys.get(key);
    if (!names) {
      if (this.secretKeys.size >= JsonSchemaValidator.MAX_CACHED) this.secretKeys.clear();
      names = secretPropertyNames(def.parameters);
      this.secretKeys.set(key, names);
    }
    return names;
  }

  private async runChecked(call: ToolCallRequest, ctx: ToolExecutionContext, started: number, name: string): Promise<ToolRunResult> {
    const def = this.registry.get(name);
    const parsed = parseToolArguments(call?.arguments);
    const secretKeys = this.secretKeysOf(def);
    const st: CallState = {
      started, name, ctx,
      callId: typeof call?.callId === 'string' && call.callId ? call.callId : `local-${randomUUID()}`,
      args: parsed.ok ? parsed.value : call?.arguments,
      signature: null,
      traceSignature: null,
      secretKeys,
      secretValues: parsed.ok ? collectSecretValues(parsed.value, secretKeys) : [],
    };
    // validating first also applies the defaults the canonical signature needs
    const validation = parsed.ok && def ? this.validator.validate(def.parameters, parsed.value, this.cacheKey(def)) : undefined;
    // asked before the call is traced, so what the policy refuses is masked in the trace too
    const policyRefusal = parsed.ok ? safePolicy(ctx?.argumentPolicy, JSON.stringify(parsed.value)) : null;
    if (policyRefusal?.mask) st.secretValues.push(...policyRefusal.mask);
    if (parsed.ok) {
      st.signature = this.safeSignature(name, def?.action, parsed.value, ctx?.projectId);
      const masked = redactSecrets(parsed.value, [...this.secrets.values(), ...st.secretValues], secretKeys);
      st.traceSignature = this.safeSignature(name, def?.action, masked, ctx?.projectId);
    }
    this.traceCall(st);

    if (!parsed.ok) return this.fail(st, 'validation_error', parsed.message);
    if (!def || !validation) {
      const names = (await this.availableTools()).map((t) => t.name);
      return this.fail(st, 'validation_error', `unknown tool "${name}"; available tools: ${names.join(', ') || '(none)'}`, { availableTools: names });
    }
    if (!(await this.isAvailable(def))) {
      const reason = safeReason(def);
      return this.fail(st, 'unavailable', `tool "${name}" is not available right now${reason ? `: ${reason}` : ''}`);
    }
    if (!validation.ok && validation.reason === 'schema_error') {
      return this.fail(st, 'unavailable', `tool "${name}" cannot be called: ${validation.message}`);
    }
    if (!validation.ok) {
      return this.fail(st, 'validation_error', `invalid arguments for "${name}": ${validation.errors.join('; ')}`, {
        errors: validation.errors,
        parameters: def.parameters,
      });
    }
    if (ctx?.signal?.aborted) return this.fail(st, 'cancelled', 'cancelled');
    // a configured secret never leaves through a tool, whatever put it into the arguments
    if (this.secrets.foundIn(JSON.stringify(validation.value))) return this.refuse(st, 'configured_secret', 'its arguments carry a configured secret');
    if (policyRefusal) return this.refuse(st, policyRefusal.reason, policyRefusal.why);

    // the tool gets its own copy: whatever it does to it, `args` in the result stays what was validated
    const execution = await this.execute(def, structuredClone(validation.value), ctx);
    if (execution.kind === 'threw') return this.classifyThrow(st, def, execution);
    const value = execution.value as ToolExecuteResult | undefined;
    if (value === null || typeof value !== 'object' || !('output' in value)) {
      return this.fail(st, 'exception', `tool "${name}" returned no result (expected { output })`);
    }
    const sources = Array.isArray(value.sources) ? value.sources.filter((s): s is ToolSource => !!s && typeof s === 'object') : [];
    // one rule for every source of tools: a result the tool itself marks as an error (an MCP
    // `isError` result, a built-in's error object) is an `exception`-class outcome, not a success
    const reportedError = value.isError === true;
    return this.finish(st, reportedError ? 'exception' : 'success', value.output, { isError: reportedError, sources });
  }

  /** Runs `execute` under the tool's timeout merged with the caller's signal; a tool that ignores the signal is abandoned. */
  private async execute(def: ToolDefinition, args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<Execution> {
    const timeoutMs = def.timeoutMs && def.timeoutMs > 0 ? def.timeoutMs : this.defaultTimeoutMs;
    const controller = new AbortController();
    const parent = ctx?.signal;
    let timedOut = false;
    let settled = false;
    const onParentAbort = () => controller.abort(parent ? abortReason(parent) : undefined);
    parent?.addEventListener('abort', onParentAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      const e = new Error(`tool "${def.name}" timed out after ${timeoutMs} ms`);
      e.name = 'TimeoutError';
      controller.abort(e);
    }, timeoutMs);
    let onAbort: () => void = () => undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(abortReason(controller.signal));
      controller.signal.addEventListener('abort', onAbort, { once: true });
    });
    const progress = ctx?.progress;
    const toolCtx: ToolExecutionContext = {
      projectId: ctx?.projectId,
      requestId: ctx?.requestId,
      signal: controller.signal,
      progress: (p: ToolProgress) => {
        if (settled || !progress) return; // a late report from an abandoned tool goes nowhere
        try {
          progress(p);
        } catch (err) {
          this.logger.warn(`progress listener failed for ${def.name}: ${errorMessage(err)}`);
        }
      },
    };
    const running = new Promise<unknown>((resolve) => resolve(def.execute(args, toolCtx)));
    running.catch(() => undefined); // an abandoned tool may reject later
    aborted.catch(() => undefined);
    try {
      return { kind: 'returned', value: await Promise.race([running, aborted]) };
    } catch (error) {
      return { kind: 'threw', error, timedOut, cancelled: !!parent?.aborted };
    } finally {
      settled = true;
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
      controller.signal.removeEventListener('abort', onAbort);
    }
  }

  private classifyThrow(st: CallState, def: ToolDefinition, ex: Extract<Execution, { kind: 'threw' }>): ToolRunResult {
    if (ex.cancelled) return this.fail(st, 'cancelled', 'cancelled');
    if (ex.timedOut) return this.fail(st, 'timeout', `tool "${def.name}" timed out after ${def.timeoutMs && def.timeoutMs > 0 ? def.timeoutMs : this.defaultTimeoutMs} ms`);
    const err = ex.error as Record<string, unknown> | null | undefined;
    if (err instanceof ToolFailure || (err?.name === 'ToolFailure' && OUTCOMES.has(String(err.outcome)))) {
      const f = err as unknown as ToolFailure;
      const outcome = OUTCOMES.has(f.outcome) ? f.outcome : 'exception';
      return this.fail(st, outcome, errorMessage(f), f.details);
    }
    if (isRateLimit(err)) return this.fail(st, 'rate_limited', errorMessage(err));
    return this.fail(st, 'exception', errorMessage(err));
  }

  /**
   * A call refused by policy before it runs: traced as `tool_call_refused` (the reason, never the
   * value) and answered like invalid arguments, so the model is told and the turn goes on.
   */
  private refuse(st: CallState, reason: string, why: string): ToolRunResult {
    this.record(st, 'tool_call_refused', { name: st.name, callId: st.callId, reason });
    return this.fail(st, 'validation_error', `refused by policy: ${why}; the call was not made. Do not put such values into tool arguments.`, { refused: reason });
  }

  private fail(st: CallState, outcome: Exclude<ToolOutcome, 'success'>, message: string, details?: unknown): ToolRunResult {
    const output: Record<string, unknown> = { error: outcome, message: redactString(message, this.secrets.values()) };
    if (details !== undefined) output.details = details;
    return this.finish(st, outcome, output, { isError: true, sources: [] });
  }

  private finish(st: CallState, outcome: ToolOutcome, rawOutput: unknown, extra: { isError: boolean; sources: ToolSource[] }): ToolRunResult {
    const first = toJsonText(rawOutput);
    // a tool that echoes a secret (an MCP server printing its own token) does not hand it on
    const { text, output: jsonOutput } = first.text.length > 0 && this.secrets.foundIn(first.text) ? toJsonText(this.secrets.maskKnown(first.output, first.text)) : first;
    const capped = capJsonText(text, this.maxResultBytes);
    const output = capped.truncated ? capped.wrapper : jsonOutput;
    const latencyMs = Math.round(performance.now() - st.started);
    this.record(st, 'tool_result', {
      name: st.name,
      callId: st.callId,
      outcome,
      latencyMs,
      truncated: capped.truncated,
      outputBytes: capped.originalBytes,
      isError: extra.isError,
      output: this.traceOutput(st, output, capped.text),
    });
    return {
      toolName: st.name, args: st.args, outcome, output, outputText: capped.text, truncated: capped.truncated,
      isError: extra.isError, latencyMs, sources: extra.sources, signature: st.signature,
    };
  }

  private traceCall(st: CallState): void {
    const secrets = [...this.secrets.values(), ...st.secretValues];
    const args =
      typeof st.args === 'string'
        ? redactRawArguments(redactString(cutUtf8(st.args, TRACE_OUTPUT_MAX_BYTES), secrets), st.secretKeys)
        : redactSecrets(st.args, secrets, st.secretKeys);
    this.record(st, 'tool_call', { name: st.name, callId: st.callId, args, signature: st.traceSignature });
  }

  private traceOutput(st: CallState, output: unknown, text: string): unknown {
    const secrets = [...this.secrets.values(), ...st.secretValues];
    if (Buffer.byteLength(text, 'utf8') <= TRACE_OUTPUT_MAX_BYTES) return redactSecrets(output, secrets, st.secretKeys);
    return `${redactString(cutUtf8(text, TRACE_OUTPUT_MAX_BYTES), secrets)}… [trace copy cut at ${TRACE_OUTPUT_MAX_BYTES} bytes]`;
  }

  private record(st: CallState, type: 'tool_call' | 'tool_result' | 'tool_call_refused', details: Record<string, unknown>): void {
    try {
      this.trace.record({ type, requestId: st.ctx?.requestId ?? null, projectId: st.ctx?.projectId ?? null, details });
    } catch (err) {
      this.logger.warn(`could not trace ${type} of ${st.name}: ${errorMessage(err)}`);
    }
  }

  /** Registered tools whose `isAvailable()` answers true within AVAILABILITY_TIMEOUT_MS, sorted by name. */
  private async availableTools(): Promise<ToolDefinition[]> {
    const all = this.registry.all();
    const flags = await Promise.all(all.map((t) => this.isAvailable(t)));
    return all.filter((_, i) => flags[i]);
  }

  private async isAvailable(def: ToolDefinition): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = Symbol('timed out');
    try {
      const check = new Promise<unknown>((resolve) => resolve(def.isAvailable()));
      const limit = new Promise<symbol>((resolve) => {
        timer = setTimeout(() => resolve(timedOut), AVAILABILITY_TIMEOUT_MS);
      });
      check.catch(() => undefined);
      const answer = await Promise.race([check, limit]);
      return answer !== timedOut && !!answer;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private safeSignature(name: string, action: string | undefined, args: Record<string, unknown>, projectId: string): string | null {
    try {
      return toolSignature({ name, action, args, projectId: typeof projectId === 'string' ? projectId : '' });
    } catch {
      return null;
    }
  }

  private cacheKey(def: ToolDefinition): string {
    return this.registry.hashOf(def.name) ?? definitionHash(def);
  }
}

/** The caller's argument policy; one that throws refuses (a broken policy must not let calls through). */
function safePolicy(policy: ToolExecutionContext['argumentPolicy'], argsJson: string): ArgumentRefusal | null {
  if (!policy) return null;
  try {
    return policy(argsJson);
  } catch {
    return { reason: 'policy_error', why: 'the argument policy could not decide' };
  }
}

/** The message of anything thrown, never its stack; redaction of known secrets happens in `fail`. */
export function errorMessage(err: unknown): string {
  let msg: string;
  try {
    if (err instanceof Error) msg = err.message || err.name || 'error';
    else if (typeof err === 'string') msg = err;
    else if (err && typeof err === 'object' && typeof (err as { message?: unknown }).message === 'string') msg = (err as { message: string }).message;
    else if (err === undefined || err === null) msg = `tool threw ${String(err)}`;
    else msg = `tool threw ${String(err)}`;
  } catch {
    msg = 'tool threw a value that cannot be described';
  }
  return msg.length > ERROR_MESSAGE_MAX_CHARS ? `${msg.slice(0, ERROR_MESSAGE_MAX_CHARS)}…` : msg;
}

function isRateLimit(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  try {
    const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown; response?: { status?: unknown } };
    if (e.status === 429 || e.statusCode === 429 || e.code === 429 || e.response?.status === 429) return true;
    return typeof e.name === 'string' && /rate.?limit/i.test(e.name);
  } catch {
    return false;
  }
}

/**
 * Masks `"key": "value"` pairs with a secret-looking or `x-secret` key inside arguments that
 * did not parse (they still reach the trace as text, and may hold a token).
 */
function redactRawArguments(raw: string, secretKeys: ReadonlySet<string>): string {
  return raw.replace(/"((?:[^"\\]|\\.){1,100})"(\s*:\s*)"((?:[^"\\]|\\.)*)("?)/g, (whole, key: string, colon: string, _value: string, close: string) =>
    isSecretKey(key) || secretKeys.has(key) ? `"${key}"${colon}"${REDACTED}${close}` : whole,
  );
}

/** String values of `x-secret` properties, so a tool echoing them is masked in traces too. */
function collectSecretValues(args: Record<string, unknown>, keys: ReadonlySet<string>): string[] {
  if (keys.size === 0) return [];
  const out: string[] = [];
  deepMap(args, {
    maxDepth: 20,
    tooDeep: () => undefined,
    member: (k, x) => {
      if (!keys.has(k) || typeof x !== 'string' || x.length < 4) return WALK;
      out.push(x);
      return x;
    },
  });
  return out;
}

/**
 * JSON text of any value, never throwing: plain JSON.stringify when it works; otherwise a copy
 * with cycles as "[Circular]", BigInt as strings and unreadable members as "[Unreadable]".
 * `output` is a JSON-safe value equal to the text (the original when JSON.stringify succeeded).
 */
export function toJsonText(value: unknown): { text: string; output: unknown } {
  try {
    const text = JSON.stringify(value);
    if (typeof text === 'string') return { text, output: value };
    return { text: 'null', output: null };
  } catch {
    try {
      const safe = toJsonSafe(value);
      return { text: JSON.stringify(safe) ?? 'null', output: safe };
    } catch {
      const message = 'the tool output could not be serialized as JSON';
      return { text: JSON.stringify({ error: 'unserializable_output', message }), output: { error: 'unserializable_output', message } };
    }
  }
}

function toJsonSafe(value: unknown): unknown {
  return deepMap(value, {
    maxDepth: 100,
    tooDeep: () => '[…]',
    repeats: { of: 'cycle', becomes: '[Circular]' },
    leaf: (v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'number' ? (Number.isFinite(v) ? v : null) : typeof v === 'function' || typeof v === 'symbol' ? undefined : v),
    object: (v) => {
      const toJSON = (v as { toJSON?: unknown }).toJSON;
      return typeof toJSON === 'function' ? toJSON.call(v) : WALK;
    },
    arrayUndefined: null,
    unreadable: '[Unreadable]',
  });
}

export interface CappedJson {
  /** what the model receives; always valid JSON, at most maxBytes UTF-8 bytes */
  text: string;
  truncated: boolean;
  originalBytes: number;
  /** when truncated: `{truncated, note, originalBytes, partial}` (text parsed) */
  wrapper?: Record<string, unknown>;
}

/**
 * Caps JSON text at `maxBytes` (UTF-8). Over the cap it becomes a JSON object that says so:
 * `{"truncated":true,"note":"…","originalBytes":N,"partial":"<first bytes of the JSON>"}`,
 * cut on a UTF-8 character boundary, so the model still gets valid JSON and knows it is partial.
 */
export function capJsonText(text: string, maxBytes: number): CappedJson {
  const originalBytes = Buffer.byteLength(text, 'utf8');
  if (originalBytes <= maxBytes) return { text, truncated: false, originalBytes };
  let budget = Math.max(0, maxBytes - 320);
  for (let attempt = 0; attempt < 20; attempt++) {
    const partial = cutUtf8(text, budget);
    const partialBytes = Buffer.byteLength(partial, 'utf8');
    const wrapper = {
      truncated: true,
      note: `Output truncated: the full result was ${originalBytes} bytes, over the ${maxBytes}-byte limit; "partial" holds its first ${partialBytes} bytes as text. Ask for less (a narrower path, a smaller maxBytes, fewer results) to see it whole.`,
      originalBytes,
      partial,
    };
    const out = JSON.stringify(wrapper);
    const outBytes = Buffer.byteLength(out, 'utf8');
    if (outBytes <= maxBytes) return { text: out, truncated: true, originalBytes, wrapper };
    // escaping made it grow (quotes, control characters): shrink proportionally and retry
    budget = Math.max(0, Math.floor((budget * maxBytes) / outBytes) - 64);
  }
  const fallback = { truncated: true, note: `Output truncated: the full result was ${originalBytes} bytes.`, originalBytes, partial: '' };
  return { text: JSON.stringify(fallback), truncated: true, originalBytes, wrapper: fallback };
}

/** The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes`, never splitting a character. */
export function cutUtf8(s: string, maxBytes: number): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= maxBytes) return s;
  let end = Math.max(0, maxBytes);
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--; // buf[end] is a continuation byte: back up to its lead byte
  return buf.subarray(0, end).toString('utf8');
}

function safeReason(def: ToolDefinition): string | undefined {
  try {
    return def.unavailableReason?.();
  } catch {
    return undefined;
  }
}
