import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { Public } from '../common/auth/public.decorator';
import { LLM_ADAPTER, type LlmAdapter } from '../llm/llm-adapter.port';
import { Drain } from '../common/lifecycle/drain';

/** Embedded PGlite is one connection: a ping may wait behind a running transaction. */
const DB_PING_TIMEOUT_MS = 3000;

/**
 * Probes for orchestrators (Docker, compose, Kubernetes), answered by @nestjs/terminus:
 * 200 `{status:'ok', info, details}` or 503 `{status:'error', error, details}`. Never need a key.
 */
@Public()
@ApiTags('system')
@Controller('api/health')
export class HealthProbesController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly ds: DataSource,
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    private readonly drain: Drain,
  ) {}

  @Get('live')
  @HealthCheck()
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness: the process answers HTTP (restart it when this fails)' })
  live() {
    return this.health.check([]);
  }

  @Get('ready')
  @HealthCheck()
  @ApiOperation({ operationId: 'getReadiness', summary: 'Readiness: not draining, database reachable, migrations applied, LLM configured (send traffic only when 200)' })
  ready() {
    return this.health.check([
      () => this.serving(),
      () => this.db.pingCheck('database', { connection: this.ds }).withTimeout(DB_PING_TIMEOUT_MS),
      () => this.migrations(),
      () => this.llmConfigured(),
    ]);
  }

  /** Down from SIGTERM on: the instance drains (takes no new turn), so traffic goes elsewhere. */
  private serving() {
    const check = this.indicators.check('serving');
    const since = this.drain.since;
    return since === null ? check.up() : check.down({ message: 'draining: shutting down, no new turns', since: new Date(since).toISOString() });
  }

  private async migrations() {
    const check = this.indicators.check('migrations');
    try {
      const pending = await this.ds.showMigrations();
      return pending ? check.down({ message: 'migrations are pending' }) : check.up();
    } catch (err) {
      return check.down({ message: `could not read the migrations table: ${(err as Error).message}` });
    }
  }

  /** The adapter exists only when its settings were complete; replay is a configuration too (and says so). */
  private llmConfigured() {
    const check = this.indicators.check('llm');
    const { provider, model } = this.llm;
    return provider && model ? check.up({ provider, model, replay: provider === 'replay' }) : check.down({ message: 'no model configured' });
  }
}
