import { Webhook } from 'standardwebhooks';

/** The project's signing secrets at the time of a try: the current one, and the rotated-out one during its grace period. */
export interface SigningSecrets {
  current: string;
  previous: string | null;
}

/**
 * The Standard Webhooks headers for one try. During a rotation's grace period the event is
 * signed with both secrets (the specification allows several space-separated signatures), so a
 * receiver that still holds the old secret keeps verifying until it switches.
 */
export function signedHeaders(webhookId: string, at: Date, body: string, secrets: SigningSecrets): Record<string, string> {
  const signatures = [secrets.current, secrets.previous].filter((s): s is string => !!s).map((s) => new Webhook(s).sign(webhookId, at, body));
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
