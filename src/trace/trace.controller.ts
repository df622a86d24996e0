import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { TraceEventDto, TraceQueryDto } from './dto/trace-query.dto';
import { TraceService } from './trace.service';
import { ProjectScope } from '../common/auth/project-scope.decorator';

@ApiTags('trace')
@Controller('api/trace')
export class TraceController {
  constructor(private readonly trace: TraceService) {}

  @Get()
  @ProjectScope('projectId!')
  @ApiOperation({ operationId: 'listTraceEvents', summary: 'Trace events in order (filters combine)' })
  @ApiOkResponse({ type: [TraceEventDto] })
  list(@Query() q: TraceQueryDto): Promise<TraceEventDto[]> {
    return this.trace.query(q);
  }
}
