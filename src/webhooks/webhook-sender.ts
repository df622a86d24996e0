import { Agent, type Dispatcher, request } from 'undici';
import { AddressPolicy } from '../common/net/address-policy';
import { BlockedAddressError, createGuardedDispatcher, type HostResolver } from '../common/net/guarded-dispatcher';

/** At most this much of a receiver's answer is read (and then dropped): only its status matters. */
export const RESPONSE_READ_LIMIT = 1024;

export interface SenderOptions {
  /** WEBHOOK_ALLOW_PRIVATE: private and loopback addresses may be reached */
  allowPrivate: boolean;
  timeoutMs: number;
  /** DNS, replaceable in tests (the guard checks what it returns) */
  resolver?: HostResolver;
}

/** What one POST gave: a status, or why there was none. */
export interface SendResult {
  statusCode: number | null;
  error: string | null;
}

/**
 * POSTs one signed event. Unless private addresses are allowed, the socket goes through the
 * guarded dispatcher fetch_page uses: the address each connection really reaches is checked
 * (names are resolved by the guard itself, so a DNS answer that changes in between cannot slip
 * through). Redirects are not followed (undici's request never does without its redirect
 * interceptor): a 3xx is a failed try. The answer's body is read up to RESPONSE_READ_LIMIT bytes,
 * then the connection is dropped; the whole try has one deadline.
 */
export class WebhookSender {
  private readonly dispatcher: Dispatcher;
  private closing: Promise<void> | null = null;

  constructor(private readonly o: SenderOptions) {
    const timeouts = { headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs };
    this.dispatcher = o.allowPrivate
      ? new Agent({ connect: { timeout: o.timeoutMs }, ...timeouts })
      : createGuardedDispatcher({ policy: new AddressPolicy(), resolver: o.resolver, connectTimeoutMs: o.timeoutMs, headersTimeoutMs: o.timeoutMs, bodyTimeoutMs: o.timeoutMs });
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    try {
      const res = await request(url, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'Orion-Webhooks/1' },
        body,
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      await res.body.dump({ limit: RESPONSE_READ_LIMIT }).catch(() => undefined);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      const redirect = res.statusCode >= 300 && res.statusCode < 400;
      return { statusCode: res.statusCode, error: ok ? null : redirect ? `redirect (${res.statusCode}) not followed` : `HTTP ${res.statusCode}` };
    } catch (err) {
      return { statusCode: null, error: describe(err) };
    }
  }

  /** Closes the connections; a second call (an application closed twice) does nothing. */
  close(): Promise<void> {
    this.closing ??= this.dispatcher.close().catch(() => undefined);
    return this.closing;
  }
}

/** A failed try's reason, without anything from the request (no headers, no body). */
function describe(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  const blocked = err instanceof BlockedAddressError ? err : e.cause instanceof BlockedAddressError ? e.cause : null;
  if (blocked) return `address refused: ${blocked.message}`;
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timed out';
  const code = e.code ?? (e.cause as { code?: string } | undefined)?.code;
  return `${code ? `${code}: ` : ''}${e.message ?? String(err)}`.slice(0, 300);
}
