/**
 * Whether an error means the database cannot be reached right now (down, restarting, refusing
 * connections, a connection cut mid-query) rather than a bad query: such errors become
 * `503 database_unavailable`, and the pool reconnects by itself once the database is back.
 */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
// PostgreSQL SQLSTATE: class 08 (connection exception), 57P01–57P03 (shutdown, cannot connect now)
const SQLSTATE = /^(08...|57P0[123])$/;
const MESSAGES = /Connection terminated|connection (?:is )?closed|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (?:starting up|shutting down)/i;

export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown; driverError?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && (CONNECTION_CODES.has(e.code) || SQLSTATE.test(e.code))) return true;
    if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}
