import { Public } from '../common/auth/public.decorator';
import { AnyProject } from '../common/auth/project-scope.decorator';
import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { DatabaseInfo } from '../database/database-info';
import { pingDatabase } from '../database/database-ping';
import { LLM_ADAPTER, type LlmAdapter } from '../llm/llm-adapter.port';
import { LlmModels } from '../llm/llm-models';
import { TraceWriterService } from '../trace/trace-writer.service';
import { ApiKeysService } from '../admin/api-keys.service';

export class HealthDto {
  @ApiProperty({ enum: ['ok', 'degraded'] }) status: 'ok' | 'degraded';
  @ApiProperty({ example: { status: 'up', kind: 'pglite' } }) db: { status: 'up' | 'down'; kind?: string; error?: string };
  @ApiProperty({ example: { provider: 'replay', model: 'replay', replay: true } }) llm: { provider: string; model: string; replay: boolean };
  @ApiProperty({ example: { status: 'ok', queued: 0, dropped: 0 }, description: 'trace writer: `behind` past half its queue, `dropping` once an event could not be stored' })
  trace: { status: 'ok' | 'behind' | 'dropping'; queued: number; dropped: number };
  @ApiProperty({
    example: { status: 'keys' },
    description:
      'added (issue 30): `local` (no key configured: every request has full access), `keys` (keys required, at least one valid), `no_valid_key` (keys required but every database key is revoked or expired and API_KEYS is unset: every keyed route is 401; `message` says how to recover; makes `status` degraded), `unknown` (the database could not be asked)',
  })
  auth: { status: 'local' | 'keys' | 'no_valid_key' | 'unknown'; message?: string };
}

export class ModelInfoDto {
  @ApiProperty({ example: 'qwen3:8b' }) name: string;
  @ApiProperty({ description: 'the model a turn uses when neither its message nor its conversation picks one' }) default: boolean;
  @ApiProperty() toolCalling: boolean;
  @ApiPropertyOptional({ description: 'tokens, when known (Ollama reports it; else LLM_CONTEXT_WINDOW)' }) contextWindow?: number;
}

export class CapabilitiesDto {
  @ApiProperty() provider: string;
  @ApiProperty() model: string;
  @ApiProperty() toolCalling: boolean;
  @ApiProperty({ description: 'orchestrator enabled and the model can call tools' }) orchestratorAvailable: boolean;
  @ApiProperty() orchestratorEnabled: boolean;
  @ApiProperty() twoStageEnabled: boolean;
  @ApiProperty({ description: 'true when answers are bundled recordings, not a live model' }) replay: boolean;
  @ApiProperty() contextWindow: number;
  @ApiProperty({ type: [ModelInfoDto], description: 'added (issue 13): the models a conversation or message may pick (LLM_MODELS, else LLM_MODEL alone), capabilities detected per model' })
  models: ModelInfoDto[];
}

@ApiTags('system')
@Controller('api')
export class HealthController {
  constructor(
    private readonly ds: DataSource,
    private readonly db: DatabaseInfo,
    private readonly config: AppConfigService,
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    private readonly traceWriter: TraceWriterService,
    private readonly models: LlmModels,
    private readonly keys: ApiKeysService,
  ) {}

  @Get('health')
  @Public()
  @ApiOperation({ operationId: 'getHealth', summary: 'Liveness and dependencies (never needs an API key)' })
  @ApiOkResponse({ type: HealthDto })
  async health(): Promise<HealthDto> {
    let db: HealthDto['db'];
    try {
      await pingDatabase(this.ds);
      db = { status: 'up', kind: this.db.kind };
    } catch (err) {
      db = { status: 'down', kind: this.db.kind, error: (err as Error).message };
    }
    const llm = { provider: this.llm.provider, model: this.llm.model, replay: this.llm.provider === 'replay' };
    const trace = this.traceWriter.health;
    const auth: HealthDto['auth'] = db.status === 'up' ? await this.keys.authStatus().catch(() => ({ status: 'unknown' as const })) : { status: 'unknown' };
    const ok = db.status === 'up' && trace.status === 'ok' && auth.status !== 'no_valid_key';
    return { status: ok ? 'ok' : 'degraded', db, llm, trace, auth };
  }

  @Get('config/capabilities')
  @AnyProject()
  @ApiOperation({ operationId: 'getCapabilities', summary: 'What the configured model and switches allow' })
  @ApiOkResponse({ type: CapabilitiesDto })
  async capabilities(): Promise<CapabilitiesDto> {
    const caps = await this.llm.capabilities();
    const orchestratorEnabled = this.config.get('ORCHESTRATOR_ENABLED');
    return {
      provider: caps.provider,
      model: caps.model,
      toolCalling: caps.toolCalling,
      orchestratorAvailable: orchestratorEnabled && caps.toolCalling,
      orchestratorEnabled,
      twoStageEnabled: this.config.get('TWO_STAGE_ENABLED'),
      replay: caps.replay,
      contextWindow: caps.contextWindow,
      models: await this.models.list(),
    };
  }
}
