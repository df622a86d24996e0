/** Trace event types written by Orion (docs/API.md "Tools, trace, config, health"); free-form strings are allowed too. */
export type TraceType =
  | 'tool_registration'
  | 'tool_unregistered'
  | 'tool_definition_changed'
  | 'tool_call'
  | 'tool_result'
  | 'duplicate_tool_call'
  | 'loop_detected'
  | 'tool_call_refused'
  | 'tool_retrieval'
  | 'orchestration_phase_start'
  | 'orchestration_phase_end'
  | 'orchestration_notice'
  | 'llm_request'
  | 'llm_response'
  | 'llm_error'
  | 'run_started'
  | 'run_completed'
  | 'run_cancelled'
  | 'run_paused'
  | 'run_resumed'
  | 'run_failed'
  | 'run_taken_over'
  | (string & {});

export interface TraceRecord {
  requestId?: string | null;
  projectId?: string | null;
  type: TraceType;
  details?: Record<string, unknown>;
}

/** Where protocols and tools write their trace; fire-and-forget, batched, redacted. */
export interface TraceSink {
  record(event: TraceRecord): void;
  /** resolves when everything recorded so far is stored */
  flush(): Promise<void>;
}

export const TRACE_SINK = Symbol('TRACE_SINK');
