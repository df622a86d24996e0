import { Injectable, Optional } from '@nestjs/common';
import { AppConfigService } from '../../../config/app-config.service';
import type { LlmToolSpec } from '../../../llm/llm-adapter.port';
import { ToolIndex } from './tool-index';
import { ToolIndexService } from './tool-index.service';
import { searchMultiIntent } from './multi-intent-search';
import { selectTools, type ToolRanker, type ToolSelection, type ToolSelectionInput, type ToolSelectionOptions } from './tool-selection';

/** Defaults of TOOL_RETRIEVAL_THRESHOLD and TOOL_RETRIEVAL_TOP_K (env.schema.ts). */
export const DEFAULT_TOOL_SELECTION: ToolSelectionOptions = { threshold: 24, topK: 8 };

/**
 * Sticky top-K tool selection for chat turns (selectTools), with the settings from the
 * environment and the shared tool index as ranker. Catalog tools the index does not hold
 * (not registered, e.g. a protocol's own pseudo-tools) are ranked by a small index built for
 * that catalog, so nothing in the catalog is unreachable.
 */
@Injectable()
export class ToolSelectionService {
  readonly options: ToolSelectionOptions;

  constructor(
    private readonly index: ToolIndexService,
    @Optional() config?: AppConfigService,
  ) {
    this.options = {
      threshold: config?.get('TOOL_RETRIEVAL_THRESHOLD') ?? DEFAULT_TOOL_SELECTION.threshold,
      topK: config?.get('TOOL_RETRIEVAL_TOP_K') ?? DEFAULT_TOOL_SELECTION.topK,
    };
  }

  /** The tools to offer one model step; see selectTools. */
  select<T extends Pick<LlmToolSpec, 'name' | 'description' | 'parameters'>>(input: ToolSelectionInput<T>): ToolSelection<T> {
    return selectTools(input, this.rankerFor(input.catalog), this.options);
  }

  private rankerFor(catalog: ReadonlyArray<Pick<LlmToolSpec, 'name' | 'description' | 'parameters'>>): ToolRanker {
    if (catalog.length <= this.options.threshold) return () => [];
    if (this.index.isEnabled() && catalog.every((t) => this.index.has(t.name))) return (q, k, filter) => this.index.search(q, k, 0, filter);
    const local = new ToolIndex();
    for (const t of catalog) local.add({ ...t, origin: 'builtin' });
    return (q, k, filter) => searchMultiIntent(local, q, k, 0, filter).hits;
  }
}
