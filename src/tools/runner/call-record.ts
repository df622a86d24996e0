import type { Logger } from '@nestjs/common';
import type { SecretRegistry } from '../../common/secrets/secret-registry';
import { isSecretKey, REDACTED, redactSecrets, redactString } from '../../common/util/redact.util';
import type { TraceSink } from '../../trace/trace-sink.port';
import type { ToolExecutionContext, ToolOutcome, ToolRunResult, ToolSource } from '../tool-definition';
import { toJsonText } from './json-text';
import { errorMessage } from './outcome';
import { capJsonText, cutUtf8 } from './result-cap';

/** Bytes of a result kept in the `tool_result` trace: enough to debug, small enough to store every call. */
export const TRACE_OUTPUT_MAX_BYTES = 4096;

/** One call as it is traced and answered. */
export interface CallState {
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

/**
 * Shapes a call's result (JSON-safe, secrets the tool echoed masked, capped at
 * TOOL_RESULT_MAX_BYTES) and traces `tool_call`, `tool_result` and `tool_call_refused`, with the
 * call's secrets masked in every trace.
 */
export class CallRecorder {
  constructor(
    private readonly trace: TraceSink,
    private readonly secrets: SecretRegistry,
    private readonly maxResultBytes: number,
    private readonly logger: Logger,
  ) {}

  /**
   * A call refused by policy before it runs: traced as `tool_call_refused` (the reason, never the
   * value) and answered like invalid arguments, so the model is told and the turn goes on.
   */
  refuse(st: CallState, reason: string, why: string): ToolRunResult {
    this.record(st, 'tool_call_refused', { name: st.name, callId: st.callId, reason });
    return this.fail(st, 'validation_error', `refused by policy: ${why}; the call was not made. Do not put such values into tool arguments.`, { refused: reason });
  }

  fail(st: CallState, outcome: Exclude<ToolOutcome, 'success'>, message: string, details?: unknown): ToolRunResult {
    const output: Record<string, unknown> = { error: outcome, message: redactString(message, this.secrets.values()) };
    if (details !== undefined) output.details = details;
    return this.finish(st, outcome, output, { isError: true, sources: [] });
  }

  finish(st: CallState, outcome: ToolOutcome, rawOutput: unknown, extra: { isError: boolean; sources: ToolSource[] }): ToolRunResult {
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
      // added (issue 43): the trace's copy of the output was cut at TRACE_OUTPUT_MAX_BYTES (the model got `truncated`'s cut)
      traceOutputCut: Buffer.byteLength(capped.text, 'utf8') > TRACE_OUTPUT_MAX_BYTES,
    });
    return {
      toolName: st.name, args: st.args, outcome, output, outputText: capped.text, truncated: capped.truncated,
      isError: extra.isError, latencyMs, sources: extra.sources, signature: st.signature,
    };
  }

  traceCall(st: CallState): void {
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
