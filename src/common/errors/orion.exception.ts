/**
 * Base of every coded domain exception. Each module declares `enum XExceptionCode` and
 * `class XException extends OrionException<XExceptionCode>`; AllExceptionsFilter maps the
 * code to an HTTP status once, so services never think in HTTP.
 */
export abstract class OrionException<Code extends string = string> extends Error {
  constructor(
    readonly code: Code,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = new.target.name;
  }
  /** 4xx status of this code; unknown codes are a 500 */
  abstract httpStatus(): number;
}
