import type { LlmMessage, LlmUsage } from '../llm/llm-adapter.port';
import type { ChatMode, ProtocolExecutionContext, ProtocolStrategy, TurnBudgets } from './protocol-strategy';

/** What a caller knows about a turn; OrchestrationService adds the ports (model, tools, trace, knowledge). */
export interface TurnRequest {
  /** a protocol name, or a strategy the caller owns (chat commands) */
  protocol: string | ProtocolStrategy;
  requestId: string;
  projectId: string;
  conversationId: string;
  messages: LlmMessage[];
  mode: ChatMode;
  budgets: TurnBudgets;
  debugShowToolResults: boolean;
  /** conversation custom instructions */
  systemContext?: string;
  /** the conversation's override of ORCHESTRATOR_ENABLED */
  orchestratorEnabled?: boolean;
  resumeFrom?: ProtocolExecutionContext['resumeFrom'];
  contextWindow?: number;
  /** an allowed model (LlmModels); unset: the default */
  model?: string;
  /** tools the conversation's previous turn called (its stored steps), for sticky tool selection */
  lastTurnTools?: readonly string[];
}

/** A turn ready to run: its protocol, and its context around the run's signal and control. */
export interface Turn {
  protocol: ProtocolStrategy;
  /** the model the turn talks to */
  model: string;
  /** the turn's usage with its cost at the model's LLM_PRICES entry (unchanged when it has none) */
  priced?<U extends LlmUsage>(usage: U): U & { cost?: number };
  context(signal: AbortSignal, control: ProtocolExecutionContext['control']): ProtocolExecutionContext;
}
