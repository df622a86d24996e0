/**
 * An answer of the service that is not a success: its HTTP status and, from its JSON error body
 * (docs/API.md, "Errors"), the machine-readable `code` (`run_not_found`, `two_stage_disabled`, …),
 * the message and the whole body (a refused resume lists the run's `checkpoints` there).
 */
export class OrionError extends Error {
  override readonly name = 'OrionError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }

  /** From a response that is not ok; its body is read (JSON when it is JSON). */
  static async from(res: Response): Promise<OrionError> {
    const text = await res.text().catch(() => '');
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (a proxy's page): kept as text
    }
    return OrionError.fromBody(res.status, body);
  }

  static fromBody(status: number, body: unknown): OrionError {
    const fields = (typeof body === 'object' && body !== null ? body : {}) as { error?: unknown; message?: unknown };
    const code = typeof fields.error === 'string' ? fields.error : `http_${status}`;
    const message = Array.isArray(fields.message) ? fields.message.join('; ') : typeof fields.message === 'string' ? fields.message : `HTTP ${status}`;
    return new OrionError(status, code, message, body);
  }
}

/** A stream that broke and could not be picked up again (no run to reconnect to, or the retries ran out). */
export class OrionStreamError extends Error {
  override readonly name = 'OrionStreamError';

  constructor(
    message: string,
    readonly requestId: string | undefined,
    readonly lastSeq: number,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}
