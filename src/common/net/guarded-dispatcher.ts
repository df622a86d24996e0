import { promises as dns } from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { AddressPolicy, describeVerdict, type AddressVerdict } from './address-policy';

/**
 * An undici Agent that refuses to open a socket to a disallowed address.
 *
 * The check runs where the address is decided, not before: names are resolved by a `lookup`
 * handed to `net.connect`/`tls.connect`, and that lookup refuses the connection when any
 * resolved address is disallowed. Because the socket connects to exactly what this lookup
 * returned, a DNS answer that changes between a pre-check and the connect (DNS rebinding)
 * cannot slip through. IP literals never reach a lookup, so they are classified before the
 * connect; and once connected, `socket.remoteAddress` is checked again before the request is
 * written (a last line that should never fire).
 *
 * Allow-listed `host[:port]` pairs (FETCH_ALLOW_HOSTS) connect without address checks.
 */

/** One resolved address, as `dns.lookup(…, {all: true})` returns it. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has; injectable so tests can play DNS. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = (hostname) => dns.lookup(hostname, { all: true });

/** Thrown (through undici, unchanged) when a connection target is refused. */
export class BlockedAddressError extends Error {
  readonly code = 'ERR_ORION_ADDRESS_BLOCKED';

  constructor(
    readonly host: string,
    readonly verdict: AddressVerdict,
  ) {
    super(`connection to ${host} refused: it resolves to ${describeVerdict(verdict)}`);
    this.name = 'BlockedAddressError';
  }
}

export interface GuardedDispatcherOptions {
  policy: AddressPolicy;
  /** default: the system resolver (getaddrinfo, as Node's own connect would use) */
  resolver?: HostResolver;
  /** TCP + TLS connect timeout; 10 s is undici's own default */
  connectTimeoutMs?: number;
  /** undici headers/body timeouts, a backstop behind the caller's AbortSignal */
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
}

/** Adapts a promise resolver to the callback `lookup` that `net.connect` calls. */
function toLookup(resolver: HostResolver, check?: (host: string, addresses: ResolvedAddress[]) => void): LookupFunction {
  return (hostname, options, callback) => {
    resolver(hostname)
      .then((found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const addresses = family ? found.filter((a) => a.family === family) : found;
        if (addresses.length === 0) {
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
        }
        check?.(hostname, addresses);
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      })
      .catch((err: NodeJS.ErrnoException) => callback(err, ''));
  };
}

/** A connector that applies the policy; exported for tests and for custom Agents. */
export function createGuardedConnector(options: GuardedDispatcherOptions): buildConnector.connector {
  const { policy } = options;
  const resolver = options.resolver ?? systemResolver;
  const timeout = options.connectTimeoutMs ?? 10_000;
  const refuseAny = (host: string, addresses: ResolvedAddress[]) => {
    for (const a of addresses) {
      const verdict = policy.checkAddress(a.address);
      if (!verdict.allowed) throw new BlockedAddressError(host, verdict);
    }
  };
  const open = buildConnector({ timeout, lookup: toLookup(resolver) });
  const guarded = buildConnector({ timeout, lookup: toLookup(resolver, refuseAny) });

  return (opts, callback) => {
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    if (policy.isAllowListed(opts.hostname, port)) return open(opts, callback);
    const early = policy.checkHost(opts.hostname);
    if (early && !early.allowed) {
      const err = new BlockedAddressError(opts.hostname, early);
      queueMicrotask(() => callback(err, null));
      return;
    }
    guarded(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error('connect failed'), null);
      const remote = (socket as Socket).remoteAddress;
      const verdict = remote ? policy.checkAddress(remote) : undefined;
      if (!verdict || !verdict.allowed) {
        const blocked = new BlockedAddressError(opts.hostname, verdict ?? { allowed: false, address: '?', range: 'unknown' });
        socket.destroy();
        return callback(blocked, null);
      }
      callback(null, socket);
    });
  };
}

/** The Agent every fetch_page request and webhook delivery goes through. Close it on shutdown. */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Agent {
  return new Agent({
    connect: createGuardedConnector(options),
    headersTimeout: options.headersTimeoutMs ?? 30_000,
    bodyTimeout: options.bodyTimeoutMs ?? 30_000,
    keepAliveTimeout: 4_000,
    connections: 8,
  });
}
