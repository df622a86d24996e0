/**
 * The `Idempotency-Key` side of a chat send: claim the key for this send, or follow the run an
 * earlier send with the same key started (on any instance), or refuse (422 another fingerprint,
 * 409 not started yet or queued). One function with what it reads passed in, apart from
 * ChatService.send, which only decides whether a send has a key and releases the claim when the
 * send is refused before its turn starts.
 */
import type { Observable } from 'rxjs';
import type { ClientFlow } from '../common/sse/client-flow';
import { keyInUse, keyReused } from '../common/idempotency/idempotency.exception';
import type { IdempotencyClaim, IdempotencyKeyStore } from '../database/idempotency-key.store';
import type { RunRepository } from '../runs/repositories/run.repository';
import type { SentEvent } from '../runs/run-event-bus.service';
import type { RunEventsService } from '../runs/run-events.service';
import type { ConversationTurnRepository } from './repositories/conversation-turn.repository';

/** A send whose key names a request that has no run yet waits this long for it before answering 409. */
const KEY_WAIT_MS = 10_000;
const KEY_POLL_MS = 100;
/** A key whose request has neither a run nor a queued turn this long after its claim was left by an instance that died: the next send takes it. */
const KEY_ABANDONED_MS = 30_000;

/** What a keyed send reads: the keys, the runs they name, a run's events, the queued turns. */
export interface KeyedSendDeps {
  keys: IdempotencyKeyStore;
  runs: Pick<RunRepository, 'findById'>;
  events: Pick<RunEventsService, 'follow' | 'followLive'>;
  queued: Pick<ConversationTurnRepository, 'projectOf'>;
}

/**
 * null when this send claimed its key (it starts the turn); else the events of the run the key
 * names (`live`: without what a takeover superseded, see RunEventsService.followLive). The claim is one insert under the key's unique constraint, so of two sends at once on
 * two instances exactly one starts the turn; the other waits here until that run is stored.
 */
export async function claimOrFollow(deps: KeyedSendDeps, claim: IdempotencyClaim, flow: ClientFlow, clientGone: AbortSignal, live = false): Promise<Observable<SentEvent> | null> {
  const { keys } = deps;
  const deadline = Date.now() + KEY_WAIT_MS;
  for (let held = await keys.claim(claim); held; held = (await keys.find(claim.projectId, claim.key)) ?? (await keys.claim(claim))) {
    if (held.fingerprint !== claim.fingerprint) throw keyReused(claim.key, held.requestId);
    if (await deps.runs.findById(held.requestId)) return live ? deps.events.followLive(held.requestId, flow, clientGone) : deps.events.follow(held.requestId, 0, flow, clientGone);
    if (await deps.queued.projectOf(held.requestId)) throw keyInUse(claim.key, held.requestId, "is queued behind its conversation's active turn");
    if (Date.now() >= deadline || clientGone.aborted) {
      if (held.ageMs >= KEY_ABANDONED_MS && (await keys.takeOver(claim, held.requestId))) return null;
      throw keyInUse(claim.key, held.requestId, 'has not started its turn yet');
    }
    await new Promise((resolve) => setTimeout(resolve, KEY_POLL_MS));
  }
  return null;
}
