/**
 * Base of every coded domain exception. AllExceptionsFilter asks it for its HTTP status once,
 * so services never think in HTTP. A module declares its codes and their statuses as data and
 * gets its class from {@link codedException}.
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

/**
 * The exception class of a module, from its code → status table:
 * `export class ChatException extends codedException(CHAT_STATUS) {}`.
 * The table is a `Record` over the module's code enum, so a code added without a status does
 * not compile.
 */
export function codedException<Code extends string>(statuses: Readonly<Record<Code, number>>) {
  abstract class CodedException extends OrionException<Code> {
    /** every code of the module with its status (the exception-codes test reads it) */
    static readonly statuses: Readonly<Record<string, number>> = statuses;

    httpStatus(): number {
      return Object.hasOwn(statuses, this.code) ? statuses[this.code] : 500;
    }
  }
  return CodedException;
}

/** The seconds a coded refusal tells its caller to wait (`details.retryAfter`), answered as `Retry-After` by the error filters. */
export function retryAfterOf(exception: unknown): number | undefined {
  if (!(exception instanceof OrionException)) return undefined;
  const v = exception.details?.retryAfter;
  return typeof v === 'number' && v > 0 ? v : undefined;
}
