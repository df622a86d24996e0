import { ProjectScope } from '../common/auth/project-scope.decorator';
import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { IngestKnowledgeDto, KnowledgeModulesQueryDto, KnowledgeSearchQueryDto } from './dto/knowledge-request.dto';
import {
  IngestSummaryDto,
  KnowledgeModuleDto,
  RetrievalResultDto,
  mapIngestSummary,
  mapKnowledgeModule,
  mapRetrievalResult,
} from './dto/knowledge-response.dto';
import { KnowledgeIngestService } from './knowledge-ingest.service';
import { KnowledgeService } from './knowledge.service';

const DEFAULT_PROJECT = 'default';

/** The knowledge base over HTTP (docs/API.md "Knowledge base"). */
@ApiTags('knowledge')
@Controller('api/knowledge')
export class KnowledgeController {
  constructor(
    private readonly ingestService: KnowledgeIngestService,
    private readonly knowledge: KnowledgeService,
  ) {}

  @Post('ingest')
  @ProjectScope('projectId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'ingestKnowledge',
    summary: 'Index the Markdown and text documents under WORKSPACE_ROOT/<projectId>/<path>',
    description:
      'Indexes .md/.markdown/.mdx, .txt/.text, .rst and .adoc/.asciidoc files (up to 1 MiB, no binaries, no dotfiles, no node_modules, ' +
      'symlinks not followed). Unchanged files are skipped, changed files have their chunks replaced, files deleted since the last ingest are removed.',
  })
  @ApiOkResponse({ type: IngestSummaryDto })
  @ApiBadRequestResponse({ description: 'invalid body, or a path that leaves the project folder (knowledge_invalid_path)' })
  @ApiNotFoundResponse({ description: 'the project folder or the path does not exist (knowledge_path_not_found)' })
  async ingest(@Body() body: IngestKnowledgeDto): Promise<IngestSummaryDto> {
    const summary = await this.ingestService.ingest({ projectId: body.projectId ?? DEFAULT_PROJECT, module: body.module, path: body.path });
    return mapIngestSummary(summary);
  }

  @Get('modules')
  @ProjectScope('projectId')
  @ApiOperation({ operationId: 'listKnowledgeModules', summary: "The project's knowledge modules (one per top-level folder unless named at ingest) with chunk counts" })
  @ApiOkResponse({ type: [KnowledgeModuleDto] })
  @ApiBadRequestResponse({ description: 'projectId does not match [A-Za-z0-9_-]{1,64}' })
  async modules(@Query() query: KnowledgeModulesQueryDto): Promise<KnowledgeModuleDto[]> {
    return (await this.knowledge.modules(query.projectId ?? DEFAULT_PROJECT)).map(mapKnowledgeModule);
  }

  @Get('search')
  @ProjectScope('projectId')
  @ApiOperation({ operationId: 'searchKnowledge', summary: 'What rag_query returns for a question: ranked chunks with snippets, scores, confidence and metrics' })
  @ApiOkResponse({ type: RetrievalResultDto })
  @ApiBadRequestResponse({ description: 'missing q, topK outside 1..20, or an invalid projectId' })
  async search(@Query() query: KnowledgeSearchQueryDto): Promise<RetrievalResultDto> {
    return mapRetrievalResult(await this.knowledge.retrieve(query.projectId ?? DEFAULT_PROJECT, query.q, query.topK ?? 5));
  }
}
