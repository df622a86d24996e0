import type { UntrustedValues } from './untrusted-output';
import type { ToolSelection, ToolSelectionInput } from './modes/tool-index/tool-selection';
import type { LlmAdapter, LlmMessage, LlmToolSpec } from '../llm/llm-adapter.port';
import type { ToolRunner } from '../tools/tool-runner.port';
import type { TraceSink } from '../trace/trace-sink.port';
import type { KnowledgeRetriever } from '../knowledge/knowledge-retriever.port';
import type { ProtocolEvent } from './protocol-event';
import type { ApprovalsPort } from './approvals.port';
import type { ApprovalSetting } from '../tools/tool-definition';
import type { ContentLoopSettings } from './loops/content-loop';

export type ChatMode = 'act' | 'plan';

/** Budgets of one turn; each bounded 1..20 by the request DTO and the configuration. */
export interface TurnBudgets {
  maxPhaseCycles: number;
  maxDuplicateAttempts: number;
  maxIterations: number;
  /** tokens the turn may use (prompt + completion of every call); 0 or absent: no limit (loops/token-budget.ts) */
  turnTokenBudget?: number;
}

/** Asked by a protocol at its natural pause points. */
export interface RunControlPort {
  /** true once a pause was requested for this run (stored flag, delivered by NOTIFY) */
  pauseRequested(): boolean;
}

/**
 * Everything a protocol may use. No HTTP, no Nest: the same generator runs under SSE, under
 * unit tests with a scripted adapter, and in benchmarks.
 */
export interface ProtocolExecutionContext {
  requestId: string;
  projectId: string;
  conversationId: string;
  /** conversation history, oldest first, ending with the new user message; no system prompt */
  messages: LlmMessage[];
  mode: ChatMode;
  llm: LlmAdapter;
  tools: ToolRunner;
  trace: TraceSink;
  budgets: TurnBudgets;
  debugShowToolResults: boolean;
  /** aborted by cancel, client disconnect (unless detached) or shutdown */
  signal: AbortSignal;
  control: RunControlPort;
  /**
   * a stored checkpoint to continue from (resume). `takeover`: the run was waiting for a person
   * on an instance that died and is continued here; an approval pending in the checkpoint is
   * still open (on a resume after a pause it was voided and is asked again)
   */
  resumeFrom?: {
    phaseIndex: number;
    state: Record<string, unknown>;
    takeover?: boolean;
    /** a new run forked from the checkpoint: what the parent spent before it is the parent's, so this run's usage starts at nothing */
    fork?: boolean;
    /**
     * a takeover (issue 44): the calls (by call id) that the dead instance had started after the
     * checkpoint; each may or may not have run (a protocol that says so in `readCheckpoint` goes
     * on with them; any other's run is not continued)
     */
    startedCalls?: string[];
  };
  /**
   * Calls that wait for a person: the conversation's setting, and the port that waits for the
   * decision. Absent: no call waits (tests, benchmarks).
   */
  approvals?: ApprovalsPort & { setting: ApprovalSetting };
  /** extra system guidance (conversation custom instructions, knowledge modules) */
  systemContext?: string;
  /** strategy-specific switches (e.g. unified: `orchestratorEnabled` for this conversation) */
  flags?: Record<string, unknown>;
  /** the project's knowledge base (modules for the system prompt, retrieval for the direct path) */
  knowledge?: KnowledgeRetriever;
  /** the model's context window in tokens (LLM_CONTEXT_WINDOW or the provider's figure) */
  contextWindow?: number;
  /** this turn's values seen only in tool output (the untrusted-output policy); absent: no such policy */
  untrusted?: UntrustedValues;
  /** sticky top-K: which tools a model step is offered when the catalog is large (offeredTools) */
  toolSelection?: { select(input: ToolSelectionInput<LlmToolSpec>): ToolSelection<LlmToolSpec> };
  /** tools the conversation's previous turn called, kept on offer (sticky) */
  lastTurnTools?: readonly string[];
  /** the content-loop detector's thresholds (LOOP_CONTENT_*); absent: the defaults */
  contentLoop?: ContentLoopSettings;
}

/** What a protocol supports; callers (pause, resume) ask this instead of testing its name. */
export interface ProtocolCapabilities {
  /** stops at natural pause points when `control.pauseRequested()` says so */
  pausePoints: boolean;
  /** continues from a stored checkpoint (`resumeFrom`); `readCheckpoint` is then defined */
  resume: boolean;
  /** offers tools to the model */
  tools: boolean;
}

/** A turn protocol: two-stage, unified, … collected under PROTOCOL_STRATEGIES. */
export interface ProtocolStrategy {
  readonly kind?: 'protocol';
  readonly name: string;
  readonly capabilities: ProtocolCapabilities;
  execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined>;
  /**
   * Reads a stored checkpoint (resume-capable protocols): the conversation it continues and, when
   * it was stored as a call started (issue 44), that call's id; throws CheckpointFormatError
   * when the checkpoint cannot be read.
   */
  readCheckpoint?(state: unknown): {
    baseMessages: LlmMessage[];
    /** two-stage: the checkpoint was stored as this call started (issue 44): a takeover continues that call */
    cutCallId?: string;
    /** the run can go on even though calls started after this checkpoint (`resumeFrom.startedCalls`): it answers them itself */
    answersStartedCalls?: boolean;
    /**
     * the protocol stores a checkpoint as each call starts (two-stage), so a call started after
     * this checkpoint by a build that also stored the turn's start (phase 0) never ran: a
     * takeover need not close the run for it (`interruptedCall`). False: such a call may have run.
     * Declared by each protocol, so the run engine never tests a protocol's name
     */
    checkpointsEachCall: boolean;
  };
}
