import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { MetricsService } from './metrics.service';

@ApiTags('system')
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ operationId: 'getMetrics', summary: 'Prometheus metrics (needs a key when API_KEYS is set)' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text exposition format' })
  metricsText(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
