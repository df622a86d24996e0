import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TraceController } from './trace.controller';
import { TraceEventEntity } from './trace-event.entity';
import { TraceEventRepository } from './repositories/trace-event.repository';
import { TraceService } from './trace.service';
import { TRACE_SINK } from './trace-sink.port';
import { TraceWriterService } from './trace-writer.service';
import { TraceDeletionService } from './trace-deletion.service';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([TraceEventEntity])],
  controllers: [TraceController],
  providers: [TraceEventRepository, TraceWriterService, TraceService, TraceDeletionService, { provide: TRACE_SINK, useExisting: TraceWriterService }],
  exports: [TRACE_SINK, TraceWriterService, TraceService, TraceDeletionService, TraceEventRepository],
})
export class TraceModule {}
