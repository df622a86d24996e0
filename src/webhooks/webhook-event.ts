/**
 * What a webhook says (docs/API.md, Webhooks): one JSON event per run end, or per run that
 * starts waiting for a person. Built from the outbox row's columns, the same bytes on every try.
 */

/** The events: a run's end (its status), or a run waiting for a person's approval. */
export type WebhookEventType = 'run.completed' | 'run.cancelled' | 'run.failed' | 'run.awaiting_approval' | 'budget.reached' | 'budget.warning';

/** The stored answer is sent up to this many characters (`answerTruncated` says when it was cut). */
export const WEBHOOK_ANSWER_LIMIT = 8000;

/** The body of a webhook. */
export interface WebhookPayload {
  type: WebhookEventType;
  requestId: string | null;
  conversationId: string | null;
  projectId: string;
  status: string;
  stopReason: string | null;
  /** null while the run waits for a person, or when a closed run's answer could not be rebuilt */
  answer: string | null;
  answerTruncated: boolean;
  usage: Record<string, unknown> | null;
  /** when the event happened (the run closed, or started waiting): RFC 3339 */
  at: string;
}

/** An outbox row's columns that make its payload. */
export interface OutboxEventRow {
  type: WebhookEventType;
  /** null for a project's event (budget.*) */
  requestId: string | null;
  conversationId: string | null;
  projectId: string;
  status: string;
  stopReason: string | null;
  answer: string | null;
  answerTruncated: boolean;
  usage: Record<string, unknown> | null;
  /** a budget event's budget (scope, id, period, limits, spent, resetsAt) */
  details?: Record<string, unknown> | null;
  createdAt: Date;
}

/** The payload's JSON text; keys in a fixed order, so every try sends the same bytes. */
export function payloadJson(r: OutboxEventRow): string {
  // a budget's event is about a project, not a run (docs/API.md, Webhooks)
  if (r.type === 'budget.reached' || r.type === 'budget.warning') return JSON.stringify({ type: r.type, projectId: r.projectId, budget: r.details ?? null, at: r.createdAt.toISOString() });
  const payload: WebhookPayload = {
    type: r.type,
    requestId: r.requestId,
    conversationId: r.conversationId,
    projectId: r.projectId,
    status: r.status,
    stopReason: r.stopReason,
    answer: r.answer,
    answerTruncated: r.answerTruncated,
    usage: r.usage,
    at: r.createdAt.toISOString(),
  };
  return JSON.stringify(payload);
}

/** The `webhook-id` of an outbox row: stable across its tries, so receivers can drop repeats. */
export function webhookIdOf(deliveryId: string): string {
  return `msg_${deliveryId.replaceAll('-', '')}`;
}

/** The event type of a run that ended with this status. */
export function endEventType(status: 'completed' | 'cancelled' | 'failed'): WebhookEventType {
  return `run.${status}`;
}
