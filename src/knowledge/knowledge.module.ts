import { Module } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { createEmbeddingProvider } from './embedding/embedding-provider.factory';
import { KNOWLEDGE_EMBEDDING_PROVIDER } from './embedding/embedding-provider.port';
import { KnowledgeController } from './knowledge.controller';
import { KnowledgeIngestService } from './knowledge-ingest.service';
import { KNOWLEDGE_RETRIEVER } from './knowledge-retriever.port';
import { KnowledgeRepository } from './repositories/knowledge.repository';
import { KnowledgeService } from './knowledge.service';
import { ModuleSummaryCache } from './module-summary.cache';

/**
 * The knowledge base: ingest (`POST /api/knowledge/ingest`), modules and search routes, and
 * the KNOWLEDGE_RETRIEVER port that `rag_query` and the unified route use. Needs the global
 * AppConfigModule and DatabaseModule (TypeORM's DataSource).
 */
@Module({
  controllers: [KnowledgeController],
  providers: [
    KnowledgeRepository,
    KnowledgeService,
    KnowledgeIngestService,
    ModuleSummaryCache,
    { provide: KNOWLEDGE_RETRIEVER, useExisting: KnowledgeService },
    { provide: KNOWLEDGE_EMBEDDING_PROVIDER, useFactory: createEmbeddingProvider, inject: [AppConfigService] },
  ],
  exports: [KNOWLEDGE_RETRIEVER, KnowledgeService, KnowledgeIngestService],
})
export class KnowledgeModule {}
