// Every event a chat run sends, each with the fields of its own type: a `switch` on `type` that
// TypeScript checks is exhaustive (clients/typescript/test/examples.spec.ts compiles it).
import { createOrion, type RunEvent } from '../src';

export function describeEvent(event: RunEvent): string {
  const at = `#${event.seq} ${event.phase} ${event.phaseIndex}/${event.cycleIndex}`;
  switch (event.type) {
    case 'start':
      return `${at} run ${event.requestId} (${event.protocol}, model ${event.model ?? '?'})${event.resumed ? ` resumed from ${event.resumeFromPhaseIndex}` : ''}`;
    case 'phase':
      return `${at} phase ${event.status}${event.reason ? ` (${event.reason})` : ''}`;
    case 'chunk':
      return event.content;
    case 'tool_calls':
      return `${at} calls ${event.calls.map((c) => `${c.name}(${c.arguments})`).join(', ')}`;
    case 'tool_progress':
      return `${at} ${event.tool} ${event.action}${event.outcome ? ` ${event.outcome}` : ''}${event.durationMs !== undefined ? ` in ${event.durationMs} ms` : ''}`;
    case 'tool_phase':
      return `${at} ${event.toolId}: ${event.stage} ${event.message}`;
    case 'sources':
      return `${at} ${event.data.length} sources (${event.ragCount} rag, ${event.webCount} web, confidence ${event.confidence})`;
    case 'notice':
      return `${at} notice ${event.code}: ${event.message}`;
    case 'error':
      return `${at} error ${event.code}${event.retryable ? ' (retryable)' : ''}: ${event.message}`;
    case 'approval_required':
      return `${at} ${event.tool} waits for approval ${event.approvalId}: ${event.reason}${event.expiresAt ? ` until ${event.expiresAt}` : ''}`;
    case 'approval_decided':
      return `${at} approval ${event.approvalId}: ${event.decision}${event.edited ? ' (edited)' : ''} by ${event.by ?? 'anyone'}`;
    case 'queued':
      return `${at} queued at ${event.position} behind ${event.activeRequestId}`;
    case 'paused':
      return `${at} paused; resume from ${event.resumeFromPhaseIndex}`;
    case 'done':
      return `${at} done (${event.stopReason}, ${event.usage.totalTokens} tokens): ${event.fullContent}`;
    default: {
      // a new event type in the document makes this a compile error until it has its case
      const unhandled: never = event;
      return unhandled;
    }
  }
}

export async function main(baseUrl: string, apiKey?: string): Promise<void> {
  const orion = createOrion({ baseUrl, apiKey });
  const turn = orion.chat.send({ content: 'Summarize docs/roadmap.md', options: { detach: true } });
  for await (const event of turn) {
    if (event.type === 'approval_required') await orion.approvals.decide(event.requestId, event.approvalId, { decision: 'approve' });
    console.log(describeEvent(event));
  }
}
