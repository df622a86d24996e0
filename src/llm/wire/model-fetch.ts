import { pipeline, Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Agent, interceptors, request, type Dispatcher } from 'undici';

/**
 * A `fetch` for the model SDKs on undici's `request` API. Node's global `fetch` is undici too,
 * but under its WHATWG layer: a Request, Headers and a ReadableStream per call, the request body
 * teed to allow redirects, and every chunk of a streamed answer passed through a web stream.
 * `request` skips that layer; what it returns is turned back into a Response, so the SDK sees
 * the same thing (status, headers, `json()`/`text()`, errors).
 *
 * A success (2xx with a body) becomes a {@link StreamedResponse}, left unread: readBody reads
 * its body as the Node stream it is, and `json()`/`text()` work as on any Response. An error
 * answer is read whole into an ordinary Response (the SDK reads its message). A call this
 * function does not know how to send as it is (a Request object, a streamed or form body) goes
 * to the global `fetch` unchanged.
 */
export function modelFetch(dispatcher: Dispatcher = defaultDispatcher()): typeof fetch {
  return async (input, init) => {
    const body = init?.body;
    if (input instanceof Request || !(body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array)) return fetch(input, init);
    const url = input instanceof URL ? input.href : input;
    const res = await request(url, {
      method: (init?.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod,
      headers: headerRecord(init?.headers),
      // undici keeps the body it was given for the whole exchange (its request handler and its
      // request, for errors and redirects): a string body is kept as that string AND as the
      // Buffer undici encodes it into. Encoded here once, only the Buffer stays, outside the JS
      // heap, while the answer streams (the messages and tool definitions of a model request
      // are most of what a stream waiting for model deltas holds; bench/README.md, load)
      body: typeof body === 'string' ? Buffer.from(body, 'utf8') : (body ?? undefined),
      signal: init?.signal ?? undefined,
      dispatcher,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else if (value !== undefined) headers.append(name, value);
    }
    const responseInit = { status: res.statusCode, statusText: res.statusText ?? '', headers };
    const answer = decoded(res.body, headers.get('content-encoding'));
    // a success is left unread, whatever its type says: some servers stream under another one
    if (res.statusCode >= 200 && res.statusCode < 300 && !NULL_BODY_STATUS.has(res.statusCode)) return new StreamedResponse(answer, responseInit);
    const bytes = Buffer.concat(await answer.toArray());
    return new Response(NULL_BODY_STATUS.has(res.statusCode) || bytes.byteLength === 0 ? null : bytes, responseInit);
  };
}

/**
 * A Response whose body stays a Node stream (undici's). readBody reads `stream` directly; any
 * other reader still gets a working Response: `body` is the stream wrapped as a web stream,
 * `text()`, `json()` and `arrayBuffer()` read it whole.
 */
export class StreamedResponse extends Response {
  private web: ReadableStream<Uint8Array<ArrayBuffer>> | undefined;

  constructor(
    readonly stream: Readable,
    init: ResponseInit,
  ) {
    super(null, init);
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> {
    this.web ??= Readable.toWeb(this.stream) as ReadableStream<Uint8Array<ArrayBuffer>>;
    return this.web;
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const all = Buffer.concat(await this.stream.toArray());
    return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer;
  }

  override async text(): Promise<string> {
    return Buffer.from(await this.arrayBuffer()).toString('utf8');
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }
}

/**
 * The body decoded as `fetch` decodes it (gzip, deflate, br). `request` sends no Accept-Encoding,
 * but a proxy in front of a model server may compress anyway: undecoded, a stream would end as
 * "no finish_reason" and an error's message would be binary. Destroying the decoded stream
 * destroys undici's body (and its connection) too.
 */
function decoded(body: Readable, encoding: string | null): Readable {
  const codings = (encoding ?? '').toLowerCase().split(',').map((c) => c.trim()).filter((c) => c && c !== 'identity');
  if (codings.length === 0) return body;
  const decoders = codings.reverse().map((c) => (c === 'gzip' || c === 'x-gzip' ? createGunzip() : c === 'deflate' ? createInflate() : c === 'br' ? createBrotliDecompress() : null));
  if (decoders.some((d) => d === null)) return body; // an unknown coding is passed on as it is, as fetch does
  return pipeline([body, ...decoders] as unknown as [Readable, ...NodeJS.WritableStream[]], () => undefined) as unknown as Readable;
}

/** Statuses whose Response must have no body (the constructor refuses one). */
const NULL_BODY_STATUS: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

let shared: Dispatcher | undefined;

/**
 * Keep-alive connections as `fetch` has them, and redirects followed as `fetch` follows them (at
 * most 20); one for the process, so every adapter talking to the same server shares its connections.
 */
function defaultDispatcher(): Dispatcher {
  shared ??= new Agent().compose(interceptors.redirect({ maxRedirections: 20 }));
  return shared;
}

/** The request's headers as one record (a Headers object joins repeated names with ", ", as it sends them). */
function headerRecord(h: HeadersInit | undefined): Record<string, string> {
  if (!h) return {};
  if (h instanceof Headers || Array.isArray(h)) return Object.fromEntries(h instanceof Headers ? h : new Headers(h));
  return h;
}

/** A response's body as readBody takes it: a StreamedResponse's Node stream, else the web stream. */
export function bodyOf(response: Response): ReadableStream<Uint8Array> | Readable | null {
  return response instanceof StreamedResponse ? response.stream : response.body;
}
