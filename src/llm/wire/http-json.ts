import { modelFetch } from './model-fetch';

/**
 * A non-2xx HTTP answer, with the server's own error message (`{"error":"…"}` from Ollama,
 * `{"error":{"message":"…"}}` from OpenAI-style servers, else the text) and its headers
 * (Retry-After).
 */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly serverMessage: string,
    readonly headers: Headers,
  ) {
    super(`HTTP ${status}${serverMessage ? `: ${serverMessage}` : ''}`);
    this.name = 'HttpStatusError';
  }
}

const send = modelFetch();

/**
 * POSTs JSON (undici's request API, see modelFetch) and resolves with the Response once its
 * status is 2xx; the body is left unread so the caller can stream it (readBody(bodyOf(response))).
 * Non-2xx answers are drained and thrown as {@link HttpStatusError}; connection failures surface
 * as undici's own errors.
 */
export async function postJson(url: string, body: unknown, init: { signal: AbortSignal; headers?: Record<string, string> }): Promise<Response> {
  const response = await send(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, application/x-ndjson', ...init.headers },
    body: JSON.stringify(body),
    signal: init.signal,
  });
  if (response.ok) return response;
  const text = await response.text().catch(() => '');
  throw new HttpStatusError(response.status, errorMessageOf(text), response.headers);
}

function errorMessageOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown };
    const e = parsed?.error;
    if (typeof e === 'string') return e;
    if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return (e as { message: string }).message;
    if (typeof parsed?.message === 'string') return parsed.message;
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
