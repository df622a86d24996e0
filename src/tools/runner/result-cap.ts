export interface CappedJson {
  /** what the model receives; always valid JSON, at most maxBytes UTF-8 bytes */
  text: string;
  truncated: boolean;
  originalBytes: number;
  /** when truncated: `{truncated, note, originalBytes, partial}` (text parsed) */
  wrapper?: Record<string, unknown>;
}

/**
 * Caps JSON text at `maxBytes` (UTF-8). Over the cap it becomes a JSON object that says so:
 * `{"truncated":true,"note":"…","originalBytes":N,"partial":"<first bytes of the JSON>"}`,
 * cut on a UTF-8 character boundary, so the model still gets valid JSON and knows it is partial.
 */
export function capJsonText(text: string, maxBytes: number): CappedJson {
  const originalBytes = Buffer.byteLength(text, 'utf8');
  if (originalBytes <= maxBytes) return { text, truncated: false, originalBytes };
  let budget = Math.max(0, maxBytes - 320);
  for (let attempt = 0; attempt < 20; attempt++) {
    const partial = cutUtf8(text, budget);
    const partialBytes = Buffer.byteLength(partial, 'utf8');
    const wrapper = {
      truncated: true,
      note: `Output truncated: the full result was ${originalBytes} bytes, over the ${maxBytes}-byte limit; "partial" holds its first ${partialBytes} bytes as text. Ask for less (a narrower path, a smaller maxBytes, fewer results) to see it whole.`,
      originalBytes,
      partial,
    };
    const out = JSON.stringify(wrapper);
    const outBytes = Buffer.byteLength(out, 'utf8');
    if (outBytes <= maxBytes) return { text: out, truncated: true, originalBytes, wrapper };
    // escaping made it grow (quotes, control characters): shrink proportionally and retry
    budget = Math.max(0, Math.floor((budget * maxBytes) / outBytes) - 64);
  }
  const fallback = { truncated: true, note: `Output truncated: the full result was ${originalBytes} bytes.`, originalBytes, partial: '' };
  return { text: JSON.stringify(fallback), truncated: true, originalBytes, wrapper: fallback };
}

/** The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes`, never splitting a character. */
export function cutUtf8(s: string, maxBytes: number): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= maxBytes) return s;
  let end = Math.max(0, maxBytes);
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--; // buf[end] is a continuation byte: back up to its lead byte
  return buf.subarray(0, end).toString('utf8');
}
