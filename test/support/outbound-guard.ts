import { Socket } from 'node:net';

/** Hosts a test's own process may connect to: this machine. */
const LOCAL = new Set(['localhost', '127.0.0.1', '::1', '[::1]', '::ffff:127.0.0.1']);

export interface OutboundGuard {
  /** every connection this process tried to open off the machine, as `host:port` (each was refused) */
  attempts: string[];
  restore(): void;
}

/**
 * Records and refuses every TCP (and so TLS, HTTP, fetch, webhook) connection this process
 * opens to anything but loopback, before any DNS: `net.Socket#connect` is where `net.connect`,
 * `tls.connect`, node:http and undici all end up, and it sees the host name the caller gave.
 * A refused connection fails with ECONNREFUSED-like `outbound connection refused by the test`, as
 * a closed network would. IPC paths (a Unix socket) pass.
 */
export function guardOutbound(): OutboundGuard {
  const original = Socket.prototype.connect;
  const attempts: string[] = [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  Socket.prototype.connect = function guardedConnect(this: Socket, ...args: any[]): Socket {
    // net.connect hands its normalized [options, callback] as one array argument
    const first = Array.isArray(args[0]) ? args[0][0] : args[0];
    const options = typeof first === 'object' && first !== null ? (first as { host?: string; port?: number; path?: string }) : typeof first === 'number' ? { port: first, host: typeof args[1] === 'string' ? args[1] : undefined } : { path: String(first) };
    if (typeof options.path !== 'string') {
      const host = options.host ?? 'localhost';
      if (!LOCAL.has(host) && !host.endsWith('.localhost') && !/^127\./.test(host)) {
        attempts.push(`${host}:${options.port}`);
        process.nextTick(() => this.destroy(Object.assign(new Error(`outbound connection to ${host}:${options.port} refused by the test`), { code: 'ECONNREFUSED' })));
        return this;
      }
    }
    return (original as (...a: unknown[]) => Socket).apply(this, args);
  } as typeof Socket.prototype.connect;
  return {
    attempts,
    restore: () => {
      Socket.prototype.connect = original;
    },
  };
}
