import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * Response-body helpers for the web fetcher: what a content type means to us, how to
 * decompress, how to read at most N bytes (and stop the transfer there), how to decode.
 */

/** How a body becomes text: html goes through Readability, the rest is used as is. */
export type ContentKind = 'html' | 'text' | 'json';

export interface ParsedContentType {
  /** lower-case `type/subtype`, '' when the header is missing */
  mime: string;
  charset?: string;
}

export function parseContentType(header: string | string[] | undefined): ParsedContentType {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return { mime: '' };
  const [type, ...params] = value.split(';');
  const charset = params
    .map((p) => /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(p)?.[1])
    .find((c): c is string => !!c);
  return { mime: type.trim().toLowerCase(), charset: charset?.toLowerCase() };
}

/** The kind for a MIME type, or null when it is not text we can read (images, PDFs, zips…). */
export function contentKindOf(mime: string): ContentKind | null {
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (mime === 'application/json' || mime === 'text/json' || /^application\/[\w.+-]+\+json$/.test(mime)) return 'json';
  if (mime.startsWith('text/')) return 'text';
  if (mime === 'application/xml' || /^application\/[\w.+-]+\+xml$/.test(mime)) return 'text';
  return null;
}

/** For a response without Content-Type: HTML if it looks like it, text if it has no NUL bytes. */
export function sniffContentKind(bytes: Uint8Array): ContentKind | null {
  const head = Buffer.from(bytes.subarray(0, 1024));
  if (head.includes(0)) return null;
  const start = head.toString('utf8').replace(/^\uFEFF/, '').trimStart().slice(0, 64).toLowerCase();
  if (start.startsWith('<!doctype html') || start.startsWith('<html') || start.startsWith('<head')) return 'html';
  if (start.startsWith('{') || start.startsWith('[')) return 'json';
  return 'text';
}

/**
 * A decompressor for a Content-Encoding, `null` for identity, or 'unsupported'.
 * Byte caps apply to the decompressed stream, so a compression bomb stops at the cap too.
 */
export function decoderFor(encoding: string | string[] | undefined): NodeJS.ReadWriteStream | null | 'unsupported' {
  const value = (Array.isArray(encoding) ? encoding.join(',') : encoding ?? '').trim().toLowerCase();
  if (value === '' || value === 'identity') return null;
  if (value === 'gzip' || value === 'x-gzip') return createGunzip();
  if (value === 'deflate') return createInflate();
  if (value === 'br') return createBrotliDecompress();
  return 'unsupported';
}

/**
 * Stops a response body we will not read. undici reports a destroyed, unfinished body as an
 * 'error' (RequestAbortedError); that is expected here, so it is swallowed.
 */
export function discardBody(body: { on(event: 'error', fn: () => void): unknown; destroy(): unknown }): void {
  body.on('error', () => undefined);
  body.destroy();
}

export interface CappedBody {
  bytes: Buffer;
  /** the body was longer than the cap and the transfer was stopped there */
  truncated: boolean;
}

/**
 * Reads at most `maxBytes` from `source` (through `decoder` when given), then destroys the
 * source so the server stops sending. Rejects with the signal's reason when it aborts.
 */
export async function readCapped(
  source: Readable,
  decoder: NodeJS.ReadWriteStream | null,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<CappedBody> {
  const stream: AsyncIterable<Buffer> = decoder
    ? (pipeline(source, decoder, () => undefined) as unknown as AsyncIterable<Buffer>)
    : source;
  const onAbort = () => source.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal?.addEventListener('abort', onAbort, { once: true });
  const chunks: Buffer[] = [];
  let total = 0;
  let truncated = false;
  try {
    if (signal?.aborted) onAbort();
    for await (const chunk of stream) {
      const room = maxBytes - total;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        total += room;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      total += chunk.length;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (!source.destroyed) discardBody(source);
  }
  return { bytes: Buffer.concat(chunks, total), truncated };
}

/** `<meta charset=…>` or `<meta http-equiv=content-type content="…charset=…">` in the first 2 KB. */
function sniffHtmlCharset(bytes: Buffer): string | undefined {
  const head = bytes.subarray(0, 2048).toString('latin1');
  return /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1]?.toLowerCase();
}

/**
 * windows-1252 at 0x80–0x9F (WHATWG Encoding). Node 20's TextDecoder decodes every label that
 * means windows-1252 (latin1, iso-8859-1, ascii, …) as ISO-8859-1, which turns "€" into U+0080.
 */
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

function decodeWindows1252(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/[\x80-\x9f]/g, (c) => String.fromCharCode(CP1252_HIGH[c.charCodeAt(0) - 0x80]));
}

/** Decodes with the declared (or sniffed) charset; unknown labels fall back to UTF-8. */
export function decodeBody(bytes: Buffer, kind: ContentKind, charset?: string): string {
  const label = charset ?? (kind === 'html' ? sniffHtmlCharset(bytes) : undefined) ?? 'utf-8';
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label);
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.encoding === 'windows-1252' ? decodeWindows1252(bytes) : decoder.decode(bytes);
}
