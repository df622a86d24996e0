/**
 * Durations as operators write them (issue 43): a whole number and a unit, `500ms`, `90s`,
 * `10m`, `12h`, `30d`, `2w`. A bare number is refused (seconds or milliseconds? the unit says),
 * so is a fraction or a sum (`1h30m`): one way to write each value.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const DURATION = /^(\d{1,12})(ms|s|m|h|d|w)$/;
/** Ten years: past that a value is a typo, not a policy. */
export const MAX_DURATION_MS = 10 * 365 * 86_400_000;

/** The milliseconds of `text` (`90s` → 90000); undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2]];
  return ms <= MAX_DURATION_MS ? ms : undefined;
}

/** Words that turn a duration setting off (compaction) or keep rows for ever (retention). */
export const OFF_WORDS = ['0', 'off', 'forever', 'never'] as const;

/**
 * A setting that is a duration or off: milliseconds, or null for off (`0`, `off`, `forever`,
 * `never`, or unset). Throws on anything else (the schema validated it before, so only a caller
 * that skipped validation sees it).
 */
export function durationOrOff(value: string | undefined | null): number | null {
  if (value === undefined || value === null || value.trim() === '') return null;
  const v = value.trim().toLowerCase();
  if ((OFF_WORDS as readonly string[]).includes(v)) return null;
  const ms = parseDuration(v);
  if (ms === undefined || ms === 0) throw new Error(`not a duration: ${JSON.stringify(value)} (e.g. 90s, 12h, 30d, or off)`);
  return ms;
}

/** Whether `value` is a duration of at least 1 ms or an off word (for the schema and DTO validation). */
export function isDurationOrOff(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    durationOrOff(value);
    return true;
  } catch {
    return false;
  }
}

/** `90000` → `90s`, `2592000000` → `30d`: the largest unit that divides it (for answers and logs). */
export function formatDuration(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/** The shortest PARTITION_INTERVAL: below it the partitions' own overhead (catalog rows, planning) outweighs what dropping them saves. */
export const MIN_PARTITION_SPAN_MS = 10_000;

/**
 * The milliseconds of a PARTITION_INTERVAL (issue 43): a duration of at least 10 s and at most a
 * day that divides a day evenly (`30s`, `1m`, `15m`, `1h`, `1d`), so partitions stay aligned to
 * UTC days; undefined for anything else.
 */
export function partitionSpanMs(text: string): number | undefined {
  const ms = parseDuration(text);
  return ms !== undefined && ms >= MIN_PARTITION_SPAN_MS && ms <= 86_400_000 && 86_400_000 % ms === 0 ? ms : undefined;
}
