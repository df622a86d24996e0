import { Injectable } from '@nestjs/common';
import type { IdempotentSend } from '../../common/idempotency/idempotency-key';
import { keyInUse, keyReused } from '../../common/idempotency/idempotency.exception';
import { AppConfigService } from '../../config/app-config.service';
import { IdempotencyKeyStore } from '../../database/idempotency-key.store';

/** A send whose key names an execution still under way waits this long for its result before answering 409. */
const WAIT_MS = 30_000;
const POLL_MS = 100;
/** An execution with no result this long after its claim was left by an instance that died: the next send takes the key. */
const ABANDONED_MS = 10 * 60_000;

/**
 * Tool-only executions named by an `Idempotency-Key` (docs/API.md, Idempotent sends): the first
 * send with the key runs, and its result is stored with the key; a later send with the same key
 * and body, on any instance, gets that result (waiting for it while the first still runs), never
 * a second execution; another body is a 422.
 */
@Injectable()
export class KeyedExecutions {
  constructor(
    private readonly keys: IdempotencyKeyStore,
    private readonly config: AppConfigService,
  ) {}

  async run<T>(projectId: string, send: IdempotentSend, requestId: string, execute: () => Promise<T>): Promise<T> {
    const claim = { projectId, key: send.key, fingerprint: send.fingerprint, requestId, windowMs: this.config.get('IDEMPOTENCY_WINDOW_MS') };
    const deadline = Date.now() + WAIT_MS;
    for (let held = await this.keys.claim(claim); held; held = (await this.keys.find(projectId, send.key)) ?? (await this.keys.claim(claim))) {
      if (held.fingerprint !== send.fingerprint) throw keyReused(send.key, held.requestId);
      if (held.result !== null && held.result !== undefined) return held.result as T;
      if (Date.now() >= deadline) {
        if (held.ageMs >= ABANDONED_MS && (await this.keys.takeOver(claim, held.requestId))) break;
        throw keyInUse(send.key, held.requestId, 'is still executing');
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    let result: T;
    try {
      result = await execute();
    } catch (err) {
      // nothing to give a retry: it may run again
      await this.keys.release(projectId, send.key, requestId).catch(() => undefined);
      throw err;
    }
    await this.keys.saveResult(projectId, send.key, requestId, result);
    return result;
  }
}
