import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { AppConfigService } from '../config/app-config.service';
import { redactSecrets } from '../common/util/redact.util';
import type { LlmToolSpec } from '../llm/llm-adapter.port';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import type { ApprovalNeed, ApprovalSetting, RepeatPolicy, ToolDefinition, ToolExecutionContext, ToolRunResult } from './tool-definition';
import { ToolApprovalPolicy } from './approval/approval-policy';
import { ApprovalOverridesService } from './approval/approval-overrides.service';
import { ToolRegistryService, definitionHash } from './tool-registry.service';
import type { ToolCallRequest, ToolRunner } from './tool-runner.port';
import { JsonSchemaValidator } from './json-schema.validator';
import { parseToolArguments, toolSignature } from './tool-signature.util';
import { availableTools } from './runner/availability';
import { ToolCallPipeline } from './runner/call-pipeline';
import { ToolCallPolicy } from './runner/call-policy';
import { CallRecorder } from './runner/call-record';
import { errorMessage } from './runner/outcome';

/**
 * The only way a tool runs (the ToolRunner port). For each call it parses the arguments,
 * finds the tool, checks availability, validates with ajv (defaults applied), runs `execute`
 * under a per-tool timeout merged with the caller's signal, classifies what happened into a
 * ToolOutcome, caps the result at TOOL_RESULT_MAX_BYTES and traces `tool_call`/`tool_result`.
 * The steps live in `runner/`: the stages of a call (call-pipeline), its arguments, the policy
 * that allows or refuses it, its execution under one deadline, its outcome and its record.
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
  private readonly secrets: SecretRegistry;
  private readonly rerun: Set<string>;
  private readonly policy: ToolCallPolicy;
  private readonly pipeline: ToolCallPipeline;
  private readonly approvals: ToolApprovalPolicy;

  constructor(
    private readonly registry: ToolRegistryService,
    config: AppConfigService,
    @Inject(TRACE_SINK) trace: TraceSink,
    @Optional() secrets?: SecretRegistry,
    /** the projects' overrides (absent in unit tests: the configuration alone decides) */
    @Optional() private readonly overrides?: ApprovalOverridesService,
  ) {
    this.secrets = secrets ?? SecretRegistry.fromConfig(config);
    this.rerun = new Set(config.list('TOOLS_RERUN'));
    const keyOf = (def: ToolDefinition) => this.cacheKey(def);
    this.policy = new ToolCallPolicy(this.secrets, keyOf);
    this.approvals = new ToolApprovalPolicy(config.list('TOOLS_REQUIRE_APPROVAL'), config.get('TOOLS_APPROVAL_DEFAULT'));
    this.pipeline = new ToolCallPipeline({
      validator: this.validator,
      policy: this.policy,
      recorder: new CallRecorder(trace, this.secrets, config.get('TOOL_RESULT_MAX_BYTES'), this.logger),
      secrets: this.secrets,
      logger: this.logger,
      defaultTimeoutMs: config.get('TOOL_TIMEOUT_MS'),
      find: (name) => this.registry.get(name),
      keyOf,
      availableNames: async () => (await this.availableTools()).map((t) => t.name),
      approvalNeed: (def, projectId, setting) => this.needOf(def, projectId, setting),
    });
  }

  /** TOOLS_RERUN first, then the tool's own policy, else `refuse`. */
  repeatPolicy(name: string): RepeatPolicy {
    if (this.rerun.has(name)) return 'rerun';
    return this.registry.get(name)?.repeat ?? 'refuse';
  }

  /** Built-ins only read (the workspace, the knowledge base, the web by GET); an MCP tool says so with `readOnlyHint: true`. */
  readOnly(name: string): boolean {
    const def = this.registry.get(name);
    return def?.origin === 'builtin' || def?.hints?.readOnly === true;
  }

  async run(call: ToolCallRequest, ctx: ToolExecutionContext): Promise<ToolRunResult> {
    const started = performance.now();
    const name = typeof call?.name === 'string' ? call.name : String(call?.name);
    try {
      return await this.pipeline.run(call, ctx, started, name);
    } catch (err) {
      // only a bug in the runner gets here; still answer, never throw
      this.logger.error(`runner failed on ${name}: ${errorMessage(err)}`);
      const message = 'internal error while running the tool';
      return {
        toolName: name, args: call?.arguments, outcome: 'exception', output: { error: 'exception', message },
        outputText: JSON.stringify({ error: 'exception', message }), truncated: false, isError: true,
        latencyMs: Math.round(performance.now() - started), sources: [], signature: null,
      };
    }
  }

  async approvalNeed(name: string, projectId: string, setting: ApprovalSetting): Promise<ApprovalNeed> {
    const def = this.registry.get(name);
    if (!def) return { required: false, reason: 'unknown_tool' };
    return this.needOf(def, projectId, setting);
  }

  /** The policy of a tool before any conversation setting, with the project's override when one is named (GET /api/tools). */
  async approvalPolicyOf(def: ToolDefinition, projectId?: string): Promise<ApprovalNeed> {
    const override = projectId === undefined ? null : await this.overrides?.overrideOf(projectId);
    return this.approvals.of(def, override);
  }

  /** `always` needs no look-up; otherwise the project's override (cached) joins the configuration. */
  private async needOf(def: ToolDefinition, projectId: string, setting: ApprovalSetting): Promise<ApprovalNeed> {
    if (setting === 'always') return this.approvals.need(def, setting);
    return this.approvals.need(def, setting, await this.overrides?.overrideOf(projectId));
  }

  decline(call: ToolCallRequest, ctx: ToolExecutionContext, reason: string): ToolRunResult {
    const name = typeof call?.name === 'string' ? call.name : String(call?.name);
    return this.pipeline.declined(call, ctx, performance.now(), name, reason);
  }

  interrupted(call: ToolCallRequest, ctx: ToolExecutionContext): ToolRunResult {
    const name = typeof call?.name === 'string' ? call.name : String(call?.name);
    return this.pipeline.interrupted(call, ctx, performance.now(), name);
  }

  checkArguments(name: string, args: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; errors: string[] } {
    const def = this.registry.get(name);
    if (!def) return { ok: false, errors: [`unknown tool "${name}"`] };
    if (args === null || typeof args !== 'object' || Array.isArray(args)) return { ok: false, errors: ['arguments must be a JSON object'] };
    const copy = structuredClone(args) as Record<string, unknown>;
    const v = this.validator.validate(def.parameters, copy, this.cacheKey(def));
    if (!v.ok) return { ok: false, errors: v.reason === 'schema_error' ? [v.message] : v.errors };
    // the same rule as a model's call: a configured secret never leaves through a tool
    if (this.secrets.foundIn(JSON.stringify(v.value))) return { ok: false, errors: ['the arguments carry a configured secret'] };
    const own = def.checkArguments?.(v.value) ?? null;
    if (own) return { ok: false, errors: [own] };
    return { ok: true, value: v.value };
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
      .map((t) => this.specOf(t));
  }

  /**
   * Every turn offers the same tools, and each of its model requests holds their specs while the
   * answer streams: one frozen spec per definition, shared by all turns, rather than a copy per
   * turn (a definition replaced or changed gets a new one).
   */
  private readonly sharedSpecs = new WeakMap<ToolDefinition, Readonly<LlmToolSpec>>();

  private specOf(t: ToolDefinition): LlmToolSpec {
    const known = this.sharedSpecs.get(t);
    if (known && known.name === t.name && known.description === t.description && known.parameters === t.parameters) return known;
    const spec = Object.freeze({ name: t.name, description: t.description, parameters: t.parameters });
    this.sharedSpecs.set(t, spec);
    return spec;
  }

  /** Arguments as they may appear in logs or streams: `x-secret` properties and secret-looking keys masked. */
  redactArgs(name: string, args: unknown): unknown {
    const def = this.registry.get(name);
    return redactSecrets(args, this.secrets.values(), this.policy.secretKeysOf(def));
  }

  /** Registered tools whose `isAvailable()` answers true within AVAILABILITY_TIMEOUT_MS, sorted by name. */
  private availableTools(): Promise<ToolDefinition[]> {
    return availableTools(this.registry.all());
  }

  private cacheKey(def: ToolDefinition): string {
    return this.registry.hashOf(def.name) ?? definitionHash(def);
  }
}
