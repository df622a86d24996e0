
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
export function redactSecrets<T>(value: T, knownSecrets: readonly string[] = [], extraKeys: ReadonlySet<string> = NO_KEYS): T {
  // deepMap's walk under these rules (the property tests compare the two), written out: every
  // trace record and every shown tool argument is copied here, and the generic walk's rule
  // closures and indirect calls were most of the cost of a small record
  if (value === null || typeof value !== 'object') return (typeof value === 'string' ? redactString(value, knownSecrets) : value) as T;
  return new SecretMasker(knownSecrets, extraKeys).walk(value, 0) as T;
}

const NO_KEYS: ReadonlySet<string> = new Set();
const MAX_REDACT_DEPTH = 20;
const CUT = '[…]';

class SecretMasker {
  /** every object met: a repeat (shared or cyclic) is cut */
  private readonly seen = new Set<object>();

  constructor(
    private readonly secrets: readonly string[],
    private readonly extraKeys: ReadonlySet<string>,
  ) {}

  walk(v: unknown, depth: number): unknown {
    if (v === null || typeof v !== 'object') return typeof v === 'string' ? redactString(v, this.secrets) : v;
    if (this.seen.has(v) || depth > MAX_REDACT_DEPTH) return CUT;
    this.seen.add(v);
    if (v instanceof Date) return this.walk(v.toISOString(), depth + 1);
    if (Array.isArray(v)) return v.map((x) => this.walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k];
      const y = isSecretKey(k) || this.extraKeys.has(k) ? (x == null ? x : REDACTED) : this.walk(x, depth + 1);
      const key = k.includes('\u0000') ? k.replace(/\u0000/g, '\uFFFD') : k;
      // assignment is the fast path; only `__proto__` would set the prototype instead
      if (key === '__proto__') Object.defineProperty(out, key, { value: y, enumerable: true, writable: true, configurable: true });
      else out[key] = y;
    }
    return out;
  }
}
