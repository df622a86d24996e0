/**
 * The SSE envelope of a run's events (docs/API.md): the events a run sends, the envelope that
 * wraps each one (`runEnvelope`, the only place it is assembled), and the serialized form of a
 * chunk's envelope (`ChunkJson`), the fast path of nearly every event of a turn. Kept apart from
 * RunStream, which numbers, batches, stores and sends the events, because the sweeper and the
 * executor's failure paths envelope events for clients the stream no longer feeds, and the
 * envelope must come out the same everywhere (replays compare it byte for byte).
 */
import type { PhaseName, ProtocolEvent } from '../orchestration/protocol-event';

/** Events sent on the wire: the protocol's (minus internal checkpoints) plus `start`. */
export type WireEvent = Exclude<ProtocolEvent, { type: 'checkpoint' }> | { type: 'start'; protocol: string; userMessageId: string | null; model?: string; resumed?: boolean; resumeFromPhaseIndex?: number; takeover?: boolean; supersedesFromSeq?: number; parentRequestId?: string };

/** `done` as sent: with the id of the stored answer (null when it could not be stored). */
export type DoneEvent = Extract<WireEvent, { type: 'done' }> & { messageId: string | null };

/** Any event a run sends, as `runEnvelope` wraps it. */
export type EnvelopedEvent = WireEvent | DoneEvent;

/** The event that ends a run's stream (RunStream.close). */
export type EndEvent = Extract<WireEvent, { type: 'done' | 'paused' }>;

export interface RunStreamIdentity {
  requestId: string;
  projectId: string;
  conversationId: string;
}

export interface EnvelopeState {
  phase: PhaseName;
  phaseIndex: number;
  cycleIndex: number;
}

/**
 * The SSE envelope of one run event (docs/API.md), the only place it is assembled: the run's
 * ids, `seq`, the phase metadata, then the event's own fields, always in this order (replays
 * and the serialized chunk fast path depend on it). `done` is in phase `complete`; a `phase`
 * event carries its own phase and indexes; any other event those of the phase it is in.
 */
export function runEnvelope(id: RunStreamIdentity, seq: number, state: EnvelopeState, event: EnvelopedEvent): Record<string, unknown> {
  if (event.type === 'chunk') return chunkEnvelope(id, seq, state, event.content);
  const { type, ...fields } = event;
  return {
    requestId: id.requestId,
    projectId: id.projectId,
    conversationId: id.conversationId,
    seq,
    phase: type === 'done' ? 'complete' : type === 'phase' ? event.phase : state.phase,
    phaseIndex: type === 'phase' ? event.phaseIndex : state.phaseIndex,
    cycleIndex: type === 'phase' ? event.cycleIndex : state.cycleIndex,
    ...fields,
  };
}

/**
 * runEnvelope of a chunk, from its text: nearly every event of a turn, so no event object to
 * wrap it in and no rest copy of one (RunStream calls this directly).
 */
export function chunkEnvelope(id: RunStreamIdentity, seq: number, state: EnvelopeState, content: string): Record<string, unknown> {
  return { requestId: id.requestId, projectId: id.projectId, conversationId: id.conversationId, seq, phase: state.phase, phaseIndex: state.phaseIndex, cycleIndex: state.cycleIndex, content };
}

/**
 * The JSON of one run's chunk envelopes, byte for byte what JSON.stringify(chunkEnvelope(…))
 * gives (same keys, same order): the run's ids are serialized once per run, the phase and
 * indexes once per phase (`phaseChanged`), so a chunk costs its seq and its content. Chunks are
 * nearly every event of a turn, and stringifying the whole envelope each time was the run
 * engine's largest cost per event.
 */
export class ChunkJson {
  /** `{"requestId":…,"projectId":…,"conversationId":…,"seq":` */
  private idJson: string | undefined;
  /** `,"phase":…,"phaseIndex":…,"cycleIndex":…,"content":` of the current envelope; reset when it changes */
  private envelopeJson: string | undefined;

  constructor(private readonly id: RunStreamIdentity) {}

  /** The envelope state changed (a phase started): the next chunk serializes it anew. */
  phaseChanged(): void {
    this.envelopeJson = undefined;
  }

  of(seq: number, content: string, state: EnvelopeState): string {
    this.idJson ??= `${JSON.stringify({ requestId: this.id.requestId, projectId: this.id.projectId, conversationId: this.id.conversationId }).slice(0, -1)},"seq":`;
    if (this.envelopeJson === undefined) {
      const { phase, phaseIndex, cycleIndex } = state;
      // the members after `seq`, serialized as JSON.stringify would (a NaN index is null there)
      this.envelopeJson = `${JSON.stringify({ phase, phaseIndex, cycleIndex }).slice(0, -1).replace('{', ',')},"content":`;
    }
    return this.idJson + seq + this.envelopeJson + JSON.stringify(content) + '}';
  }
}
