// The HTTP API as the pages use it: JSON calls and SSE streams over fetch(), with the API key
// (when the server sets API_KEYS) from localStorage as `Authorization: Bearer`. Streams use
// fetch rather than EventSource: POST routes need it, and a header keeps the key out of URLs.

import { createSseParser } from './sse-parser.js';

const API_KEY_STORAGE = 'orion.apiKey';

export function getApiKey() {
  try {
    return localStorage.getItem(API_KEY_STORAGE) ?? '';
  } catch {
    return ''; // storage disabled: no key
  }
}

/** @param {string} key an empty key removes it */
export function setApiKey(key) {
  if (key) localStorage.setItem(API_KEY_STORAGE, key);
  else localStorage.removeItem(API_KEY_STORAGE);
}

/** An answer other than 2xx, with Nest's `{statusCode, error, message}` read into `code` and `message`. */
export class ApiError extends Error {
  /** @param {number} status @param {any} body */
  constructor(status, body) {
    const message = Array.isArray(body?.message) ? body.message.join('; ') : typeof body?.message === 'string' ? body.message : `HTTP ${status}`;
    super(message);
    this.name = 'ApiError';
    this.status = status;
    /** @type {string} */
    this.code = typeof body?.error === 'string' ? body.error : `http_${status}`;
    this.body = body;
  }
}

/** @param {Record<string, string>} [extra] */
function headers(extra = {}) {
  /** @type {Record<string, string>} */
  const h = { ...extra };
  const key = getApiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

/**
 * A JSON call. Resolves with the parsed body (null when empty); throws ApiError on non-2xx and
 * a TypeError when the network failed.
 * @param {string} path
 * @param {{ method?: string, body?: unknown, signal?: AbortSignal }} [opts]
 */
export async function apiJson(path, opts = {}) {
  const res = await fetch(path, {
    method: opts.method ?? 'GET',
    headers: headers(opts.body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' }),
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
  });
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { message: text.slice(0, 500) };
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/**
 * Opens an SSE stream. Resolves with the Response once its headers say 200 text/event-stream;
 * throws ApiError for any other answer (400, 401, 404, 409… before the stream starts).
 * @param {string} path
 * @param {{ method?: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal }} [opts]
 */
export async function openSse(path, opts = {}) {
  const res = await fetch(path, {
    method: opts.method ?? 'GET',
    headers: headers({ Accept: 'text/event-stream', ...(opts.body === undefined ? {} : { 'Content-Type': 'application/json' }), ...opts.headers }),
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
    cache: 'no-store',
  });
  const type = res.headers.get('content-type') ?? '';
  if (!res.ok || !type.startsWith('text/event-stream') || !res.body) {
    let body = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    throw new ApiError(res.ok ? 502 : res.status, body ?? { message: `expected an event stream, got HTTP ${res.status} ${type}` });
  }
  return res;
}

/**
 * Reads an open SSE response to its end, calling `onMessage` for each message. Resolves when
 * the server ended the stream; rejects when the connection broke or was aborted.
 * @param {Response} res
 * @param {(m: import('./sse-parser.js').SseMessage) => void} onMessage
 */
export async function readSse(res, onMessage) {
  const reader = /** @type {ReadableStream<Uint8Array>} */ (res.body).getReader();
  const decoder = new TextDecoder();
  const parser = createSseParser();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const m of parser.push(decoder.decode(value, { stream: true }))) onMessage(m);
    }
    for (const m of parser.push(decoder.decode())) onMessage(m);
  } finally {
    reader.releaseLock();
  }
}
