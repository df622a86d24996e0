import { deepMap, WALK } from './deep-map.util';

/**
 * Secret redaction for traces, logs and streams. Keys that name a secret are masked wherever
 * they occur, bearer tokens and known secret values (LLM_API_KEY, API_KEYS) are masked inside
 * strings. Usage counters such as `promptTokens` are not secrets and stay.
 */
const SECRET_KEY = /^(authorization|proxy-authorization|x-api-key|api[-_]?key|apikey|password|passwd|secret|client[-_]?secret|access[-_]?token|refresh[-_]?token|token|bearer|cookie|set-cookie)$/i;
const SECRET_KEY_PART = /(secret|password|api[-_]?key)/i;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}/g;
const KEY_LIKE = /\b(sk-[A-Za-z0-9_-]{12,}|sk-ant-[A-Za-z0-9_-]{12,}|gsk_[A-Za-z0-9]{12,}|xai-[A-Za-z0-9]{12,})\b/g;

export const REDACTED = '[REDACTED]';

export function isSecretKey(key: string): boolean {
  let secret = keyVerdicts.get(key);
  if (secret === undefined) {
    secret = SECRET_KEY.test(key) || SECRET_KEY_PART.test(key);
    // field names come from a small set (event and trace fields), so the verdicts are remembered;
    // the bound keeps arbitrary keys of tool arguments from growing it without end
    if (keyVerdicts.size >= MAX_KEY_VERDICTS) keyVerdicts.clear();
    keyVerdicts.set(key, secret);
  }
  return secret;
}

const keyVerdicts = new Map<string, boolean>();
const MAX_KEY_VERDICTS = 2_000;

export function redactString(s: string, knownSecrets: readonly string[] = []): string {
  // NUL cannot be stored by PostgreSQL: U+FFFD stands in for it wherever redacted text goes.
  // Most strings (a streamed token) hold none of what is masked: one scan for what every
  // pattern needs (NUL, "Bearer"/"Basic", a key prefix) spares them three replacing passes.
  let out = MAYBE_MASKED.test(s) ? s.replace(/\u0000/g, '\uFFFD').replace(BEARER, `$1 ${REDACTED}`).replace(KEY_LIKE, REDACTED) : s;
  for (const secret of knownSecrets) {
    if (secret && secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/**
 * Whether redactString(s, knownSecrets) certainly gives `s` back: nothing any of its passes
 * masks or replaces can be in it. False does not mean something will be masked.
 */
export function redactsNothing(s: string, knownSecrets: readonly string[] = []): boolean {
  if (MAYBE_MASKED.test(s)) return false;
  for (const secret of knownSecrets) {
    if (secret && secret.length >= 4 && s.includes(secret)) return false;
  }
  return true;
}

/** A string without any match is left as it is by every replacing pass of redactString. */
const MAYBE_MASKED = /\u0000|Bearer|Basic|sk-|gsk_|xai-/;

/** Deep copy with secrets masked; cycles, repeats and depth beyond 20 are cut. */
export function redactSecrets<T>(value: T, knownSecrets: readonly string[] = [], extraKeys: ReadonlySet<string> = new Set()): T {
  return deepMap(value, {
    maxDepth: 20,
    tooDeep: () => '[…]',
    repeats: { of: 'any', becomes: '[…]' },
    leaf: (v) => (typeof v === 'string' ? redactString(v, knownSecrets) : v),
    object: (v) => (v instanceof Date ? v.toISOString() : WALK),
    key: (k) => (k.includes('\u0000') ? k.replace(/\u0000/g, '\uFFFD') : k),
    member: (k, x) => (isSecretKey(k) || extraKeys.has(k) ? (x == null ? x : REDACTED) : WALK),
  }) as T;
}
