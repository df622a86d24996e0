/**
 * What a new chat turn is told of its conversation: the stored messages read back as model
 * messages (rolled-back turns left out, a fork's answer in place of its parent's), trimmed to the
 * history share of the context window, and the tools the previous turn called. A plain function
 * of the conversation repository, apart from ChatService, which decides when it is read (in the
 * transaction that lets the turn start).
 */
import type { EntityManager } from 'typeorm';
import type { LlmMessage } from '../llm/llm-adapter.port';
import { contextBudget, trimHistory } from '../orchestration/context-budget';
import type { ConversationRepository } from './repositories/conversation.repository';
import { rolledBack } from './turn-marks';

/** At most this many stored messages are read back as history before the token budget trims them. */
const HISTORY_FETCH_LIMIT = 200;

/**
 * Stored history as model messages, trimmed to the history share of the context window, and
 * the tools the previous turn called (from its answer's stored steps).
 */
export async function turnHistory(
  conversations: Pick<ConversationRepository, 'recentMessages'>,
  conversationId: string,
  contextWindow: number,
  m?: EntityManager,
): Promise<{ history: LlmMessage[]; lastTurnTools: string[] }> {
  // a rolled-back turn is out of the history (its messages stay stored, marked)
  const rows = (await conversations.recentMessages(conversationId, HISTORY_FETCH_LIMIT, m)).filter((r) => !rolledBack(r));
  // a forked turn's answer replaces its parent's in what the model is told (both stay stored)
  const replaced = new Set(rows.map((m) => m.metadata?.forkOf?.requestId).filter((id): id is string => typeof id === 'string'));
  const msgs: LlmMessage[] = rows
    .filter((m) => m.content.trim().length > 0)
    .filter((m) => !(m.role === 'assistant' && m.requestId && replaced.has(m.requestId)))
    .map((m) => ({ role: m.role, content: m.content }));
  const last = rows.at(-1);
  const steps = last?.role === 'assistant' && Array.isArray(last.metadata?.steps) ? last.metadata.steps : [];
  const lastTurnTools = [...new Set(steps.flatMap((s) => (s.type === 'tool' && (s.status === 'completed' || s.status === 'failed') ? [s.name] : [])))];
  return { history: trimHistory(msgs, contextBudget(contextWindow).historyTokens), lastTurnTools };
}
