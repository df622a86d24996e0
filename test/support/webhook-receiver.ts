import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One POST the receiver got, with what `standardwebhooks` said of its signature. */
export interface ReceivedWebhook {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  payload: Record<string, unknown>;
  /** verified with the secrets the receiver holds (any of them) */
  verified: boolean;
  /** the status the receiver answered; undefined while it holds the request */
  answered?: number;
}

/** How the receiver answers the next requests, in order; past the list it answers 204. */
export type Answer = number | { hold: Promise<void>; status?: number };

/**
 * A webhook receiver on 127.0.0.1, as a customer would write it: it verifies each request with
 * the `standardwebhooks` package (against every secret it holds) and answers as scripted.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private answers: Answer[] = [];
  secrets: string[] = [];
  /** called as each request arrives, before it is answered */
  onReceive: (r: ReceivedWebhook) => void = () => undefined;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    let self: WebhookReceiver | null = null;
    const server = createServer((req, res) => void self!.handle(req, res));
    self = new WebhookReceiver(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Scripts the answers to the next requests. */
  answerNext(...answers: Answer[]): void {
    this.answers.push(...answers);
  }

  /** The requests about one run, in order. */
  about(requestId: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.payload.requestId === requestId);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
    const verified = this.secrets.some((s) => {
      try {
        new Webhook(s).verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    const got: ReceivedWebhook = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, payload: JSON.parse(body) as Record<string, unknown>, verified };
    this.received.push(got);
    this.onReceive(got);
    const answer = this.answers.shift() ?? 204;
    let status = typeof answer === 'number' ? answer : (answer.status ?? 204);
    if (typeof answer !== 'number') await answer.hold;
    if (res.destroyed) status = 0;
    got.answered = status;
    if (!res.destroyed) res.writeHead(status || 204).end('a body the sender need not read '.repeat(200));
  }
}
