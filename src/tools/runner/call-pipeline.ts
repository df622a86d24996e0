import { randomUUID } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import type { SecretRegistry } from '../../common/secrets/secret-registry';
import { redactSecrets } from '../../common/util/redact.util';
import type { ArgsValidation, JsonSchemaValidator } from '../json-schema.validator';
import type { ApprovalNeed, ApprovalSetting, ArgumentRefusal, ToolDefinition, ToolExecuteResult, ToolExecutionContext, ToolRunResult, ToolSource } from '../tool-definition';
import type { ToolCallRequest } from '../tool-runner.port';
import { isToolAvailable, unavailableReason } from './availability';
import { argumentsForTool, readArguments, safeSignature } from './call-arguments';
import { askArgumentPolicy, collectSecretValues, type ToolCallPolicy } from './call-policy';
import type { CallRecorder, CallState } from './call-record';
import { classifyThrow } from './outcome';
import { Final, Pipeline } from './pipeline';
import { executeTool, toolTimeoutMs } from './tool-execution';

export interface PipelineParts {
  validator: JsonSchemaValidator;
  policy: ToolCallPolicy;
  recorder: CallRecorder;
  secrets: SecretRegistry;
  logger: Logger;
  defaultTimeoutMs: number;
  find(name: string): ToolDefinition | undefined;
  keyOf(def: ToolDefinition): string;
  /** names of the tools available now, for the model told about an unknown one */
  availableNames(): Promise<string[]>;
  /** whether a call of this tool waits for a person (ToolApprovalPolicy, with the project's override) */
  approvalNeed(def: ToolDefinition, projectId: string, setting: ApprovalSetting): Promise<ApprovalNeed>;
}

/** What each stage hands on: the call so far. */
interface Opened { st: CallState; read: ReturnType<typeof readArguments>; def?: ToolDefinition; argumentRefusal: ArgumentRefusal | null }
interface Known { st: CallState; def: ToolDefinition; validation: ArgsValidation; argumentRefusal: ArgumentRefusal | null }
interface Valid { st: CallState; def: ToolDefinition; args: Record<string, unknown>; argumentRefusal: ArgumentRefusal | null }
interface Returned { st: CallState; def: ToolDefinition; value: unknown }

/** One tool call from the model's arguments to its result: each stage passes the call on or ends it. */
export class ToolCallPipeline {
  constructor(private readonly p: PipelineParts) {}

  run(call: ToolCallRequest, ctx: ToolExecutionContext, started: number, name: string): Promise<ToolRunResult> {
    return Pipeline.from(this.open(call, ctx, started, name))
      .then((o) => this.parsed(o))
      .then((o) => this.known(o))
      .then((k) => this.available(k))
      .then((k) => this.valid(k))
      .then((v) => this.notCancelled(v))
      .then((v) => this.allowed(v))
      .then((v) => this.approved(v))
      .then((v) => this.executed(v))
      .end((r) => this.shaped(r));
  }

  /** Reads the arguments and traces the call (masked) before anything can refuse it. */
  private open(call: ToolCallRequest, ctx: ToolExecutionContext, started: number, name: string): Opened {
    const def = this.p.find(name);
    const read = readArguments(call?.arguments, def, this.p.validator, def ? this.p.keyOf(def) : '');
    const { parsed } = read;
    const secretKeys = this.p.policy.secretKeysOf(def);
    const st: CallState = {
      started, name, ctx,
      callId: typeof call?.callId === 'string' && call.callId ? call.callId : `local-${randomUUID()}`,
      args: parsed.ok ? parsed.value : call?.arguments,
      signature: null,
      traceSignature: null,
      secretKeys,
      secretValues: parsed.ok ? collectSecretValues(parsed.value, secretKeys) : [],
    };
    // asked before the call is traced, so what the policy refuses is masked in the trace too
    const argumentRefusal = parsed.ok ? askArgumentPolicy(ctx?.argumentPolicy, JSON.stringify(parsed.value)) : null;
    if (argumentRefusal?.mask) st.secretValues.push(...argumentRefusal.mask);
    if (parsed.ok) {
      st.signature = safeSignature(name, def?.action, parsed.value, ctx?.projectId);
      const masked = redactSecrets(parsed.value, [...this.p.secrets.values(), ...st.secretValues], secretKeys);
      st.traceSignature = safeSignature(name, def?.action, masked, ctx?.projectId);
    }
    this.p.recorder.traceCall(st);
    return { st, read, def, argumentRefusal };
  }

  private parsed(o: Opened): Opened | Final {
    return o.read.parsed.ok ? o : this.fail(o.st, 'validation_error', o.read.parsed.message);
  }

  private async known(o: Opened): Promise<Known | Final> {
    const { def, st } = o;
    const validation = o.read.validation;
    if (def && validation) return { st, def, validation, argumentRefusal: o.argumentRefusal };
    const names = await this.p.availableNames();
    return this.fail(st, 'validation_error', `unknown tool "${st.name}"; available tools: ${names.join(', ') || '(none)'}`, { availableTools: names });
  }

  private async available(k: Known): Promise<Known | Final> {
    if (await isToolAvailable(k.def)) return k;
    const reason = unavailableReason(k.def);
    return this.fail(k.st, 'unavailable', `tool "${k.st.name}" is not available right now${reason ? `: ${reason}` : ''}`);
  }

  private valid({ st, def, validation, argumentRefusal }: Known): Valid | Final {
    if (validation.ok) return { st, def, args: validation.value, argumentRefusal };
    if (validation.reason === 'schema_error') return this.fail(st, 'unavailable', `tool "${st.name}" cannot be called: ${validation.message}`);
    return this.fail(st, 'validation_error', `invalid arguments for "${st.name}": ${validation.errors.join('; ')}`, {
      errors: validation.errors,
      parameters: def.parameters,
    });
  }

  private notCancelled(v: Valid): Valid | Final {
    return v.st.ctx?.signal?.aborted ? this.fail(v.st, 'cancelled', 'cancelled') : v;
  }

  /** The policy seam: allowed calls go on, refused ones are traced and told to the model. */
  private allowed(v: Valid): Valid | Final {
    const refusal = this.p.policy.decide({ name: v.st.name, def: v.def, args: v.args, ctx: v.st.ctx, argumentRefusal: v.argumentRefusal });
    return refusal ? new Final(this.p.recorder.refuse(v.st, refusal.reason, refusal.why)) : v;
  }

  /**
   * A call that needs a person and has no approval does not run: it comes back as
   * `approval_required` with its validated arguments, for the caller to ask.
   */
  private async approved(v: Valid): Promise<Valid | Final> {
    const approval = v.st.ctx?.approval;
    if (!approval || approval.granted) return v;
    const need = await this.p.approvalNeed(v.def, v.st.ctx.projectId, approval.setting);
    if (!need.required) return v;
    const result = this.p.recorder.fail(v.st, 'approval_required', `tool "${v.st.name}" needs a person's approval before it runs (${need.reason})`, { reason: need.reason });
    return new Final({ ...result, args: v.args, approval: need });
  }

  /** A call a person declined: traced like any call, answered as `denied`; nothing of the tool runs. */
  declined(call: ToolCallRequest, ctx: ToolExecutionContext, started: number, name: string, reason: string): ToolRunResult {
    const { st } = this.open(call, ctx, started, name);
    return this.p.recorder.fail(st, 'denied', `the user declined this call (${reason}); it was not made. Do not call it again in this turn.`, { declined: true, reason });
  }

  /** A call cut off by an instance's death, not run again: traced like any call, answered as `interrupted`. */
  interrupted(call: ToolCallRequest, ctx: ToolExecutionContext, started: number, name: string): ToolRunResult {
    const { st } = this.open(call, ctx, started, name);
    return this.p.recorder.fail(
      st,
      'interrupted',
      'this call was running when the instance running this turn stopped; it may or may not have run, and it was not run again.',
      { interrupted: true },
    );
  }

  private async executed({ st, def, args }: Valid): Promise<Returned | Final> {
    const timeoutMs = toolTimeoutMs(def, this.p.defaultTimeoutMs);
    const execution = await executeTool(def, argumentsForTool(args), st.ctx, timeoutMs, this.p.logger);
    if (execution.kind === 'returned') return { st, def, value: execution.value };
    const failed = classifyThrow(def.name, timeoutMs, execution);
    return this.fail(st, failed.outcome, failed.message, failed.details);
  }

  private shaped({ st, value: raw }: Returned): ToolRunResult {
    const value = raw as ToolExecuteResult | undefined;
    if (value === null || typeof value !== 'object' || !('output' in value)) {
      return this.p.recorder.fail(st, 'exception', `tool "${st.name}" returned no result (expected { output })`);
    }
    const sources = Array.isArray(value.sources) ? value.sources.filter((s): s is ToolSource => !!s && typeof s === 'object') : [];
    // one rule for every source of tools: a result the tool itself marks as an error (an MCP
    // `isError` result, a built-in's error object) is an `exception`-class outcome, not a success
    const reportedError = value.isError === true;
    return this.p.recorder.finish(st, reportedError ? 'exception' : 'success', value.output, { isError: reportedError, sources });
  }

  private fail(...args: Parameters<CallRecorder['fail']>): Final {
    return new Final(this.p.recorder.fail(...args));
  }
}
