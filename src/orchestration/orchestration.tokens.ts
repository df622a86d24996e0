import type { InjectionToken } from '@nestjs/common';
import type { ProtocolStrategy } from './protocol-strategy';

/** Multi-provider token: every chat protocol strategy, collected by OrchestrationModule. */
export const PROTOCOL_STRATEGIES: InjectionToken<ProtocolStrategy[]> = Symbol('PROTOCOL_STRATEGIES');
