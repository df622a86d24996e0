import type { InjectionToken } from '@nestjs/common';
import type { ToolModeStrategy } from './modes/tool-calls-result';
import type { ProtocolStrategy } from './protocol-strategy';

/** Anything OrchestrationService dispatches to: a chat protocol or a tool-only mode. */
export type OrchestrationStrategy = ProtocolStrategy | ToolModeStrategy;

/** Multi-provider token: every chat protocol and tool-only mode, collected by OrchestrationModule. */
export const PROTOCOL_STRATEGIES: InjectionToken<OrchestrationStrategy[]> = Symbol('PROTOCOL_STRATEGIES');
