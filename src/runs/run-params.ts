import type { Turn } from '../orchestration/turn';
import type { ApprovalSetting } from '../tools/tool-definition';
import type { TurnStep } from './answer-store.port';
import type { SentEvent } from './run-event-bus.service';
import type { EnvelopeState, WireEvent } from './run-envelope';

/** Who watches a run as it happens: gets its events in order, and can slow it down. */
export interface RunClient {
  /** resolves once the client can take more (a slow client slows the run, not memory) */
  deliver(events: SentEvent[]): Promise<void>;
  /** fires when the client has gone (nothing more need be read for it) */
  gone?: AbortSignal;
}

export interface ExecuteRunParams {
  requestId: string;
  projectId: string;
  conversationId: string;
  /** the protocol and its context, built by orchestration */
  turn: Turn;
  /** null: nobody watches (the client left before the run started) */
  client: RunClient | null;
  detach: boolean;
  /** first event(s) of this stream (`start`) */
  opening: WireEvent[];
  /** seq already used by this run (resume) */
  lastSeq: number;
  envelope?: EnvelopeState;
  /** text streamed by earlier legs of the run (resume), part of the stored answer */
  priorContent: string;
  /** steps of earlier legs of the run (resume), stored with the answer */
  priorSteps?: TurnStep[];
  /** a fork: the run and checkpoint it continues from (kept with the answer) */
  fork?: { parentRequestId: string; fromPhaseIndex: number };
  /**
   * tool calls that wait for a person: the conversation's setting and how long a call waits
   * (unset: APPROVAL_TIMEOUT_MS). Absent: no call waits.
   */
  approvals?: { setting: ApprovalSetting; timeoutMs?: number };
}
