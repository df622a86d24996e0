import type { Response } from 'express';
import { openStreams } from './open-streams';

/** Comment lines keep proxies and browsers from timing out an idle stream (docs/API.md: every 15 s). */
export const KEEP_ALIVE_MS = 15_000;

/**
 * Writes Server-Sent Events to an Express response with backpressure: `send` resolves only
 * once the socket has taken the bytes (`drain`), so a slow client slows the producer instead
 * of growing a server-side buffer. Sends `: keep-alive` comments while nothing else is sent.
 *
 * Why not Nest's `@Sse()` Observable: it writes without waiting for `drain` and cannot tell
 * the producer that the client went away; both are part of the contract here.
 */
export class SseWriter {
  private keepAlive: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly closeListeners = new Set<() => void>();

  constructor(
    private readonly res: Response,
    private readonly keepAliveMs = KEEP_ALIVE_MS,
  ) {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    // a response already closed never emits 'close' again: counting it would never end
    if (!res.destroyed) openStreams.track(res);
    res.on('close', () => {
      this.closed = true;
      this.stopKeepAlive();
      for (const l of this.closeListeners) l();
    });
    this.armKeepAlive();
  }

  /** true once the client went away or `end()` was called */
  get isClosed(): boolean {
    return this.closed || this.res.writableEnded || this.res.destroyed;
  }

  /** Called once when the connection closes (client gone or ended by us). */
  onClose(listener: () => void): () => void {
    if (this.isClosed) {
      listener();
      return () => undefined;
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** Sends one event; resolves when the socket accepted it (or the client is gone). */
  async send(id: number | string | undefined, event: string, data: unknown): Promise<void> {
    const lines: string[] = [];
    if (id !== undefined) lines.push(`id: ${id}`);
    lines.push(`event: ${event}`);
    // JSON never contains raw newlines, so one data line carries it
    lines.push(`data: ${JSON.stringify(data)}`);
    await this.write(lines.join('\n') + '\n\n');
  }

  async comment(text: string): Promise<void> {
    await this.write(`: ${text.replace(/\n/g, ' ')}\n\n`);
  }

  end(): void {
    this.stopKeepAlive();
    if (!this.res.writableEnded) this.res.end();
  }

  private write(chunk: string): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    this.armKeepAlive();
    if (this.res.write(chunk)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.once('drain', done);
      this.res.once('close', done);
    });
  }

  private armKeepAlive(): void {
    this.stopKeepAlive();
    if (this.closed) return;
    this.keepAlive = setTimeout(() => void this.comment('keep-alive'), this.keepAliveMs);
    this.keepAlive.unref?.();
  }

  private stopKeepAlive(): void {
    if (this.keepAlive) clearTimeout(this.keepAlive);
    this.keepAlive = null;
  }
}
