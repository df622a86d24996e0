import { ApiProperty } from '@nestjs/swagger';
import type { IngestSummary } from '../knowledge-ingest.service';
import type { KnowledgeModuleInfo, RetrievalResult } from '../knowledge-retriever.port';

export class SkippedFileDto {
  @ApiProperty({ example: 'docs/diagram.md' })
  path: string;

  @ApiProperty({ enum: ['unsupported_type', 'symlink', 'too_large', 'binary', 'unreadable', 'too_deep', 'limit'] })
  reason: string;
}

/** Answer of `POST /api/knowledge/ingest`: counts in files unless said otherwise. */
export class IngestSummaryDto {
  @ApiProperty({ example: 'default' }) projectId: string;
  @ApiProperty({ description: 'the ingested path relative to the project folder ("." = all of it)', example: '.' }) path: string;
  @ApiProperty({ description: 'files indexed at path after this ingest (added + updated + unchanged)' }) files: number;
  @ApiProperty({ description: 'chunks of those files' }) chunks: number;
  @ApiProperty() added: number;
  @ApiProperty({ description: 'changed files (content or module), and files re-embedded for a new embedding model' }) updated: number;
  @ApiProperty() unchanged: number;
  @ApiProperty({ description: 'files indexed before that are gone from path (deleted, or no longer indexable)' }) removed: number;
  @ApiProperty({ type: [SkippedFileDto], description: 'files not indexed, with the reason (at most 200)' }) skipped: SkippedFileDto[];
  @ApiProperty() skippedTotal: number;
  @ApiProperty({ type: [String], example: ['general', 'install', 'roadmap'] }) modules: string[];
  @ApiProperty({ description: 'chunks given an embedding vector now' }) embedded: number;
  @ApiProperty({ type: [String] }) warnings: string[];
  @ApiProperty() latencyMs: number;
}

export class KnowledgeModuleDto {
  @ApiProperty({ example: 'getting-started' }) name: string;
  @ApiProperty({ example: 'Getting Started' }) displayName: string;
  @ApiProperty({ description: 'the most common document type of the module', enum: ['md', 'txt', 'rst', 'adoc'] }) docType: string;
  @ApiProperty() chunks: number;
}

export class RetrievedSourceDto {
  @ApiProperty({ enum: ['rag'] }) type: 'rag';
  @ApiProperty({ description: 'chunk id', format: 'uuid' }) id: string;
  @ApiProperty({ example: 'Installation › Linux' }) title: string;
  @ApiProperty({ example: 'install/linux.md' }) path: string;
  @ApiProperty({ example: 'install' }) module: string;
  @ApiProperty({ description: 'the passage around the matched words' }) snippet: string;
  @ApiProperty({ description: 'the whole chunk' }) content: string;
  @ApiProperty({ minimum: 0, maximum: 1 }) score: number;
  @ApiProperty({ enum: ['high', 'medium', 'low'] }) confidence: string;
}

export class RetrievalMetricsDto {
  @ApiProperty({ enum: ['fts', 'fts+vector'] }) method: string;
  @ApiProperty() candidates: number;
  @ApiProperty() returned: number;
  @ApiProperty() latencyMs: number;
  @ApiProperty() topScore: number;
}

export class RetrievalResultDto {
  @ApiProperty() query: string;
  @ApiProperty({ type: [RetrievedSourceDto] }) sources: RetrievedSourceDto[];
  @ApiProperty({ enum: ['high', 'medium', 'low', 'none'] }) confidence: string;
  @ApiProperty({ type: RetrievalMetricsDto }) metrics: RetrievalMetricsDto;
}

export function mapIngestSummary(s: IngestSummary): IngestSummaryDto {
  return {
    projectId: s.projectId,
    path: s.path,
    files: s.files,
    chunks: s.chunks,
    added: s.added,
    updated: s.updated,
    unchanged: s.unchanged,
    removed: s.removed,
    skipped: s.skipped.map((f) => ({ path: f.path, reason: f.reason })),
    skippedTotal: s.skippedTotal,
    modules: [...s.modules],
    embedded: s.embedded,
    warnings: [...s.warnings],
    latencyMs: s.latencyMs,
  };
}

export function mapKnowledgeModule(m: KnowledgeModuleInfo): KnowledgeModuleDto {
  return { name: m.name, displayName: m.displayName, docType: m.docType, chunks: m.chunks };
}

export function mapRetrievalResult(r: RetrievalResult): RetrievalResultDto {
  return {
    query: r.query,
    sources: r.sources.map((s) => ({ ...s })),
    confidence: r.confidence,
    metrics: { ...r.metrics },
  };
}
