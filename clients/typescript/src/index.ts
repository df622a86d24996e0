export { createOrion, type Orion, type OrionApi, type OrionOptions, type ChatRoute, type SendMessage, type Run, type Conversation, type ChatMessage, type ExecuteTools, type ToolCallsResult } from './client';
export { RunEventStream, type StreamOptions, type StreamExtent, type ReconnectOptions } from './run-stream';
export type { RunEvent, RunEventType, RunEventOf, ExecuteStreamEvent } from './events';
export type { Approval, ApprovalDecision } from './approvals';
export { OrionError, OrionStreamError } from './errors';
export type { components, paths, operations } from './generated/openapi';
