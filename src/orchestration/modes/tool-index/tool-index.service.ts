import { Injectable, Logger, Optional, type OnModuleDestroy } from '@nestjs/common';
import { AppConfigService } from '../../../config/app-config.service';
import { assertUnreachable } from '../../../common/util/assert-unreachable.util';
import { ToolRegistryService, type ToolRegistryChange } from '../../../tools/tool-registry.service';
import { ToolIndex, type ToolIndexHit } from './tool-index';

/**
 * The NarrowTopK tool index, kept in step with ToolRegistryService: it indexes every tool
 * registered so far when it is constructed, then applies each registry change as it happens
 * (registered/changed → add or replace, unregistered → remove). Registry listeners run
 * synchronously, so a search right after `register`/`unregister` already sees the change.
 *
 * Availability is not the index's business: it ranks every registered tool, and callers
 * that must show only runnable tools pass a `filter` (or drop names afterwards).
 */
@Injectable()
export class ToolIndexService implements OnModuleDestroy {
  private readonly logger = new Logger('ToolIndex');
  private readonly index = new ToolIndex();
  private readonly unsubscribe: () => void;
  private following = false;
  private readonly enabled: boolean;

  constructor(registry: ToolRegistryService, @Optional() config?: AppConfigService) {
    this.enabled = config?.get('TOOL_INDEX_ENABLED') ?? true;
    // subscribe first, then seed: nothing can register in between (both run synchronously)
    this.unsubscribe = registry.onChange((change) => this.apply(change));
    for (const tool of registry.all()) this.index.add(tool);
    this.following = true;
    this.logger.log(`tool index built: ${this.index.size} tools`);
  }

  /** True while the index follows the registry (from construction until shutdown) and TOOL_INDEX_ENABLED is on. */
  isEnabled(): boolean {
    return this.enabled && this.following;
  }

  /** Number of tools indexed. */
  get size(): number {
    return this.index.size;
  }

  has(name: string): boolean {
    return this.index.has(name);
  }

  /**
   * The best `k` tools for `query`, best first, scores 0..1 (BM25 relative to the best hit,
   * scaled by how much of the query the best hit covers), none below `minScore`. `filter` (e.g. "available now") is applied before the top
   * `k` is taken, so it does not shorten the list. See ToolIndex.search.
   */
  search(query: string, k: number, minScore = 0, filter?: (name: string) => boolean): ToolIndexHit[] {
    return this.index.search(query, k, minScore, filter);
  }

  onModuleDestroy(): void {
    this.unsubscribe();
    this.following = false;
  }

  private apply(change: ToolRegistryChange): void {
    switch (change.kind) {
      case 'registered':
      case 'changed':
        this.index.replace(change.tool);
        return;
      case 'unregistered':
        this.index.remove(change.name);
        return;
      default:
        assertUnreachable(change, 'registry change');
    }
  }
}
