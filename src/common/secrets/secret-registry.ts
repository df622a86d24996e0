import { Logger } from '@nestjs/common';
import { deepMap } from '../util/deep-map.util';
import { REDACTED, redactString } from '../util/redact.util';

/**
 * Shortest value the registry masks. A shorter configured value (`"on"`, `"1"`, `"admin"`) would
 * turn ordinary words of every answer into `[REDACTED]` and, in tool arguments, refuse calls that
 * merely contain it; such values are left out (with a start-up warning naming where they come
 * from, never the value) and are not protected. Six characters is also under every real key.
 */
export const MIN_SECRET_LENGTH = 6;

/** The configuration a registry is seeded from (AppConfigService, or a test's look-alike). */
export interface SecretSeedConfig {
  get(key: 'LLM_API_KEY'): string | undefined;
  list(key: 'API_KEYS'): string[];
}

/**
 * The one list of values that must never leave the service: LLM_API_KEY, every entry of
 * API_KEYS, and whatever other modules add while they start (the MCP servers' `env` and
 * `headers` values). Every masking site (trace writer, spans, logs, tool results, run
 * events and the stored answer) and the tool-argument policy read `values()` when they
 * mask, so a value added after they were built is masked too.
 */
export class SecretRegistry {
  private readonly logger = new Logger('Secrets');
  private readonly bySource = new Map<string, string[]>();
  private cached: readonly string[] | null = null;

  static fromConfig(config: SecretSeedConfig): SecretRegistry {
    const registry = new SecretRegistry();
    registry.set('LLM_API_KEY', [config.get('LLM_API_KEY') ?? '']);
    registry.set('API_KEYS', config.list('API_KEYS'));
    return registry;
  }

  /**
   * Replaces the values a source (`LLM_API_KEY`, `mcp:<server>`…) contributes. A value of the
   * form `<scheme> <token>` (an Authorization header) also registers the token alone, which is
   * what a server or a log would print.
   */
  set(source: string, values: Iterable<string>): void {
    const kept: string[] = [];
    let short = 0;
    for (const raw of values) {
      if (typeof raw !== 'string' || raw === '') continue;
      for (const v of [raw, ...schemeToken(raw)]) {
        if (v.length >= MIN_SECRET_LENGTH) kept.push(v);
        else if (v === raw) short++;
      }
    }
    if (short > 0) this.logger.warn(`${source}: ${short} value(s) shorter than ${MIN_SECRET_LENGTH} characters are not treated as secrets`);
    this.bySource.set(source, [...new Set(kept)]);
    this.cached = null;
  }

  /** Every value, longest first (a secret that contains another is masked whole). */
  values(): readonly string[] {
    this.cached ??= [...new Set([...this.bySource.values()].flat())].sort((a, b) => b.length - a.length);
    return this.cached;
  }

  /** `text` with every value masked (plus bearer tokens and key-like strings, as redactString does). */
  mask(text: string): string {
    return redactString(text, this.values());
  }

  /**
   * A copy of `value` with the registry's values (only those: no key or pattern rules) masked in
   * every string, for data that must stay as it is otherwise (a tool's result for the model).
   * Returns `value` itself when its JSON text holds none.
   */
  maskKnown<T>(value: T, json: string): T {
    if (!this.foundIn(json)) return value;
    const mask = (s: string) => {
      let out = s;
      for (const v of this.values()) if (out.includes(v)) out = out.split(v).join(REDACTED);
      return out;
    };
    return deepMap(value, { maxDepth: 100, leaf: (v) => (typeof v === 'string' ? mask(v) : v), key: mask }) as T;
  }

  /** True when `text` contains any value (case-sensitive, as the values are). */
  foundIn(text: string): boolean {
    for (const v of this.values()) if (text.includes(v)) return true;
    return false;
  }
}

function schemeToken(value: string): string[] {
  const m = /^\s*(?:Bearer|Basic|Token|Bot)\s+(\S+)\s*$/i.exec(value);
  return m ? [m[1]] : [];
}
