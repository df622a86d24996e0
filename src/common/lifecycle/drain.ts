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

  get draining(): boolean {
    return this.startedAt !== null;
  }

  /** epoch ms the drain started, null while serving */
  get since(): number | null {
    return this.startedAt;
  }

  start(): void {
    this.startedAt ??= Date.now();
  }
}

@Global()
@Module({ providers: [Drain], exports: [Drain] })
export class DrainModule {}
