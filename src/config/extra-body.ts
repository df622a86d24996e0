/**
 * LLM_EXTRA_BODY as an object, or undefined when unset or not a JSON object (the configuration
 * check refuses the latter at startup, so the service never runs with a value it ignores).
 */
export function parseExtraBody(raw: string | undefined): Record<string, unknown> | undefined {
  if (!raw) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
