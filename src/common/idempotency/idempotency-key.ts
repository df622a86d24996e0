import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.util';
import { IdempotencyException, IdempotencyExceptionCode } from './idempotency.exception';

/** The request header a client names its send with (docs/API.md, Idempotent sends). */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** Longest key accepted (the column's width). */
export const IDEMPOTENCY_KEY_MAX = 255;

/** A send named by its client: the key, and what it asks for (its route, body and the headers that shape the turn), hashed. */
export interface IdempotentSend {
  key: string;
  fingerprint: string;
}

/** What is read of a request (express's `Request` has it). */
interface RequestLike {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/**
 * The send's `Idempotency-Key` and its fingerprint; undefined without the header. A key is 1-255
 * printable ASCII characters (a UUID is the usual choice); anything else is a 400 before anything
 * is stored. `headers` are the request headers that change the turn (they are part of "the same
 * body"), e.g. `/v1`'s `X-Orion-Conversation`.
 */
export function readIdempotencyKey(req: RequestLike, headers: readonly string[] = []): IdempotentSend | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw invalid('must be sent once');
  if (raw.length === 0 || raw.length > IDEMPOTENCY_KEY_MAX || !/^[\x20-\x7e]+$/.test(raw) || !raw.trim()) {
    throw invalid(`must be 1-${IDEMPOTENCY_KEY_MAX} printable ASCII characters, e.g. a UUID (got ${described(raw)})`);
  }
  const shaping = Object.fromEntries(headers.map((h) => [h, req.headers[h] ?? null]));
  const fingerprint = createHash('sha256')
    .update(canonicalJson({ route: `${req.method} ${req.path}`, body: req.body ?? null, headers: shaping }))
    .digest('hex');
  return { key: raw, fingerprint };
}

/**
 * What a refused key was: its length in characters and what is wrong with them. Node hands a
 * header over as one character per byte (latin1), so the bytes are read back as the UTF-8 the
 * client sent: a one-character "é" is 1 character, not 2.
 */
function described(raw: string): string {
  const chars = [...Buffer.from(raw, 'latin1').toString('utf8')];
  const count = `${chars.length} character${chars.length === 1 ? '' : 's'}`;
  if (chars.length > 0 && chars.some((c) => !/^[\x20-\x7e]$/.test(c))) return `${count}, not all printable ASCII`;
  return count;
}

/** The handler's `IdempotentSend` (or undefined): `@IdempotencyKey()`, or `@IdempotencyKey(['x-orion-conversation'])`. */
export const IdempotencyKey = createParamDecorator((headers: readonly string[] | undefined, ctx: ExecutionContext): IdempotentSend | undefined =>
  readIdempotencyKey(ctx.switchToHttp().getRequest<RequestLike>(), headers ?? []),
);

function invalid(why: string): IdempotencyException {
  return new IdempotencyException(IdempotencyExceptionCode.INVALID_KEY, `The Idempotency-Key header ${why}; nothing was started or stored`);
}
