import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AdminModule } from '../admin/admin.module';
import { HealthController } from './health.controller';
import { HealthProbesController } from './health-probes.controller';

@Module({
  // failures are answered as 503 bodies; a probe that fails every few seconds needs no log line each time
  imports: [TerminusModule.forRoot({ logger: false }), AdminModule],
  controllers: [HealthController, HealthProbesController],
})
export class HealthModule {}
