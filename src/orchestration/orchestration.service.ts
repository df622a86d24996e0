import { Inject, Injectable } from '@nestjs/common';
import { OrchestrationException, OrchestrationExceptionCode } from './orchestration.exception';
import { PROTOCOL_STRATEGIES } from './orchestration.tokens';
import type { ProtocolStrategy } from './protocol-strategy';

/** Resolves chat protocols by name; two strategies with one name stop the boot. */
@Injectable()
export class OrchestrationService {
  private readonly protocols = new Map<string, ProtocolStrategy>();

  constructor(@Inject(PROTOCOL_STRATEGIES) strategies: ProtocolStrategy[]) {
    for (const s of strategies) {
      if (this.protocols.has(s.name)) throw new Error(`Duplicate protocol strategy name: ${s.name}`);
      this.protocols.set(s.name, s);
    }
  }

  protocol(name: string): ProtocolStrategy {
    const s = this.protocols.get(name);
    if (!s) throw new OrchestrationException(OrchestrationExceptionCode.UNKNOWN_PROTOCOL, `Unknown protocol: ${name}`);
    return s;
  }

  protocolNames(): string[] {
    return [...this.protocols.keys()];
  }
}
