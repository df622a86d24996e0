import { Logger } from '@nestjs/common';
import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmErrorInfo, LlmRequest, LlmStreamEvent } from '../llm-adapter.port';
import { LlmError } from '../llm-adapter.port';
import { completionToEvents } from '../collect-completion';
import { coalesceDeltas } from '../coalesce-deltas';
import { redactInfo, toLlmErrorInfo } from '../llm-error.util';
import { RequestGuard } from '../request-guard';
import { DEFAULT_RETRY_POLICY, withRetry, type AttemptFailure, type RetryPolicy } from '../retry-policy';
import { bodyOf } from '../wire/model-fetch';
import { readBody } from '../wire/read-body';
import type { HttpAdapterOptions } from './http-adapter.options';

type Json = Record<string, unknown>;

/** One streamed body's wire format: bytes in, stream events out. */
export interface StreamDecoder {
  /** the events of every complete line or message in these bytes, produced lazily so the loop can stop between them */
  push(bytes: Uint8Array): Iterable<LlmStreamEvent>;
  /** the events of a last line or message the body left unterminated */
  flush(): Iterable<LlmStreamEvent>;
  /** what the body's end means (a cut stream is an error, not a finished answer) */
  end(): Iterable<LlmStreamEvent>;
  /** the model said it is done: the rest of the body is not read */
  readonly ended: boolean;
}

/**
 * The request lifecycle every HTTP model adapter shares, so the policies stay one:
 * a {@link RequestGuard} per request (caller's signal, overall and idle timeouts), retries before
 * the first byte only ({@link withRetry}), every failure reported as one `error` event (stream)
 * or one LlmError (complete), the API key masked in every error message and retry log.
 *
 * A subclass supplies only what differs between servers: the request body, how it is sent, how
 * a streamed body decodes, how a whole answer parses and how a failed attempt classifies.
 */
export abstract class StreamingHttpAdapter implements LlmAdapter {
  abstract readonly provider: string;
  readonly model: string;
  protected readonly policy: RetryPolicy;
  protected readonly logger: Logger;

  constructor(protected readonly options: HttpAdapterOptions) {
    this.model = options.model;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.logger = new Logger(new.target.name);
  }

  abstract capabilities(): Promise<LlmCapabilities>;

  /** The wire body of one chat request. */
  protected abstract buildBody(request: LlmRequest, stream: boolean): Json | Promise<Json>;

  /** One attempt at sending it; resolves once the response headers say 2xx. */
  protected abstract post(body: Json, request: LlmRequest, signal: AbortSignal): Promise<Response>;

  /** A fresh decoder for one streamed body. */
  protected abstract decoder(): StreamDecoder;

  /** A whole (non-streamed) JSON answer as a completion; throws LlmError when it is not one. */
  protected abstract parseCompletion(body: unknown): LlmCompletion | Promise<LlmCompletion>;

  /** Whether a failed attempt is worth another (and what to report); undefined: not recognised. */
  protected abstract classify(err: unknown): AttemptFailure | undefined;

  /** A server that ignored `stream: true` and answered in one piece (none by default). */
  protected answeredWhole(_response: Response): boolean {
    return false;
  }

  /** Streams one response. Never throws: a failure is one final `error` event. */
  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncGenerator<LlmStreamEvent> {
    const guard = new RequestGuard({ signal, timeoutMs: this.options.timeoutMs, idleTimeoutMs: this.options.idleTimeoutMs });
    try {
      if (guard.cause) {
        yield { type: 'error', error: guard.errorInfo()! };
        return;
      }
      let response: Response;
      try {
        response = await this.send(await this.buildBody(request, true), request, guard);
      } catch (err) {
        yield { type: 'error', error: this.describe(err, guard) };
        return;
      }
      if (this.answeredWhole(response)) {
        try {
          const body: unknown = await Promise.race([response.json(), guard.fired]);
          for (const event of completionToEvents(await this.parseCompletion(body))) yield event;
        } catch (err) {
          yield { type: 'error', error: this.describe(err, guard) };
        }
        return;
      }
      const decoder = this.decoder();
      try {
        for await (const bytes of readBody(bodyOf(response), guard)) {
          // deltas read together go on as one (see coalesceDeltas); one network chunk can hold
          // many lines or messages: stop between them once aborted
          for (const event of coalesceDeltas(decoder.push(bytes))) {
            if (guard.cause) throw guard.signal.reason;
            yield this.redactEvent(event);
          }
          if (decoder.ended) break;
        }
        if (!decoder.ended) for (const event of decoder.flush()) yield this.redactEvent(event);
      } catch (err) {
        // After the first byte: report, never retry (events may already be with the user).
        yield { type: 'error', error: this.describe(err, guard) };
        return;
      }
      for (const event of decoder.end()) yield event;
    } finally {
      guard.dispose();
    }
  }

  /** One non-streamed response, same retry policy; rejects with LlmError. */
  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmCompletion> {
    const guard = new RequestGuard({ signal, timeoutMs: this.options.timeoutMs });
    try {
      if (guard.cause) throw new LlmError(guard.errorInfo()!);
      const response = await this.send(await this.buildBody(request, false), request, guard);
      const body: unknown = await Promise.race([response.json(), guard.fired]);
      return await this.parseCompletion(body);
    } catch (err) {
      throw new LlmError(this.describe(err, guard));
    } finally {
      guard.dispose();
    }
  }

  /** Sends until the response headers say 2xx, retrying per the policy. */
  private send(body: Json, request: LlmRequest, guard: RequestGuard): Promise<Response> {
    return withRetry(
      () => this.post(body, request, guard.signal),
      (err) => this.classify(err),
      {
        policy: this.policy,
        signal: guard.signal,
        onRetry: (failure, delayMs, retry) => {
          this.logger.warn(`${this.model}: ${redactInfo(failure.info, [this.options.apiKey]).message}; retry ${retry} in ${delayMs} ms`);
          this.options.onRetry?.(failure.info);
        },
      },
    );
  }

  protected describe(err: unknown, guard?: RequestGuard): LlmErrorInfo {
    return toLlmErrorInfo(err, { guard, secrets: [this.options.apiKey], classify: (e) => this.classify(e) });
  }

  private redactEvent(event: LlmStreamEvent): LlmStreamEvent {
    return event.type === 'error' ? { type: 'error', error: redactInfo(event.error, [this.options.apiKey]) } : event;
  }
}
