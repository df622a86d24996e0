import { Global, Injectable, Module } from '@nestjs/common';

/**
 * Whether this instance is draining for a rolling deploy (SIGTERM received): it takes no new
 * turn (a 503 with Retry-After, so a client or load balancer sends it to another instance), its
 * readiness probe fails, and the turns it runs finish or are handed over (src/runs/run-drain.service.ts).
 * One per application, so tests that run several apps in one process drain them one by one.
 */
@Injectable()
export class Drain {
  private startedAt: number | null = null;
  private readonly leaving = new AbortController();

  get draining(): boolean {
    return this.startedAt !== null;
  }

  /** epoch ms the drain started, null while serving */
  get since(): number | null {
    return this.startedAt;
  }

  /**
   * Aborted once the drain has handed its own runs over: the streams that only follow runs
   * (the events route and the routes built on it) end then, so that the process can exit; their
   * clients reconnect to another instance. Streams opened afterwards end once their stored
   * events are sent.
   */
  get followersEnd(): AbortSignal {
    return this.leaving.signal;
  }

  start(): void {
    this.startedAt ??= Date.now();
  }

  /** Ends the streams that follow runs on this instance (see followersEnd). */
  endFollowers(): void {
    this.start();
    this.leaving.abort();
  }
}

@Global()
@Module({ providers: [Drain], exports: [Drain] })
export class DrainModule {}
