import { spawn, type ChildProcess } from 'node:child_process';

/** One exported span, flattened from OTLP/JSON. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number };
}

/**
 * A local OTLP/HTTP trace receiver (JSON encoding) in a child process: in this process its own
 * incoming requests would be traced by the HTTP instrumentation under test and exported to
 * itself again. POST /v1/traces stores a batch; GET /received returns what was stored.
 */
const SCRIPT = `
const http = require('node:http');
const got = [];
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') got.push(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.method === 'GET' ? JSON.stringify(got) : '{}');
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(String(this.address().port) + '\\n'); });
`;

export class OtlpReceiver {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static start(): Promise<OtlpReceiver> {
    const child = spawn(process.execPath, ['-e', SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.stdout!.once('data', (d: Buffer) => resolve(new OtlpReceiver(child, `http://127.0.0.1:${d.toString().trim()}`)));
    });
  }

  /** Every request body received so far, raw (to search for text that must not be there). */
  async rawBodies(): Promise<string[]> {
    return (await (await fetch(`${this.url}/received`)).json()) as string[];
  }

  async spans(): Promise<ReceivedSpan[]> {
    const out: ReceivedSpan[] = [];
    for (const body of await this.rawBodies()) {
      const doc = JSON.parse(body) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<Record<string, any>> }> }> };
      for (const rs of doc.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) {
            out.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, kind: s.kind, status: s.status, attributes: attributesOf(s.attributes ?? []) });
          }
    }
    return out;
  }

  close(): void {
    this.child.kill();
  }
}

function attributesOf(list: Array<{ key: string; value: Record<string, any> }>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list) out[key] = valueOf(value);
  return out;
}

function valueOf(v: Record<string, any>): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}
