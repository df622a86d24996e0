import { redactString } from '../common/util/redact.util';
import { LlmError, type LlmErrorInfo } from './llm-adapter.port';
import type { RequestGuard } from './request-guard';
import { classifyNetworkError, type AttemptFailure } from './retry-policy';

/**
 * The one `LlmErrorInfo` to report for a failure, in order of precedence: the guard's cause
 * (the caller aborted, or a timeout fired — whatever the transport threw because of it), an
 * `LlmError` already classified, the adapter's own classification, a connection error,
 * else `invalid_response`. The message is always passed through secret redaction with the
 * adapter's API key, because providers echo (parts of) keys in their error messages.
 */
export function toLlmErrorInfo(
  err: unknown,
  options: { guard?: RequestGuard; secrets?: Array<string | undefined>; classify?: (err: unknown) => AttemptFailure | undefined },
): LlmErrorInfo {
  const info: LlmErrorInfo = options.guard?.errorInfo() ??
    (err instanceof LlmError ? err.info : undefined) ??
    options.classify?.(err)?.info ??
    classifyNetworkError(err)?.info ?? {
      code: 'invalid_response',
      message: err instanceof Error ? err.message : String(err),
      retryable: false,
    };
  return redactInfo(info, options.secrets);
}

/** The same info with secrets masked in its message. */
export function redactInfo(info: LlmErrorInfo, secrets: Array<string | undefined> = []): LlmErrorInfo {
  return { ...info, message: redactString(info.message, secrets.filter((s): s is string => !!s)) };
}
