import type { LlmFinishReason } from './llm-adapter.port';

/**
 * Maps a provider's finish reason onto the port's small set. Servers disagree on spelling
 * (`end_turn`, `eos`, `max_tokens`, `tool_use`…), and several (Ollama native, older llama.cpp
 * and Ollama /v1) say `stop` after emitting tool calls; a response that carried tool calls
 * ended because of them, so that case is reported as `tool_calls` (`rawReason` keeps the original).
 * A missing reason is inferred the same way.
 */
export function normalizeFinishReason(raw: string | undefined | null, sawToolCalls: boolean): LlmFinishReason {
  const r = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  switch (r) {
    case '':
    case 'stop':
    case 'eos':
    case 'eos_token':
    case 'end_turn':
    case 'stop_sequence':
      return sawToolCalls ? 'tool_calls' : 'stop';
    case 'tool_calls':
    case 'function_call':
    case 'tool_use':
      return 'tool_calls';
    case 'length':
    case 'max_tokens':
    case 'model_length':
      return 'length';
    case 'content_filter':
    case 'safety':
    case 'recitation':
      return 'content_filter';
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}
