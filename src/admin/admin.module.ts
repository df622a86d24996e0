import { Module } from '@nestjs/common';
import { KEY_RESOLVER } from '../common/auth/principal';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';

/** Key management (issue 14): database keys bound to projects, and the admin routes over them. */
@Module({
  controllers: [ApiKeysController],
  providers: [ApiKeysService, { provide: KEY_RESOLVER, useExisting: ApiKeysService }],
  exports: [KEY_RESOLVER],
})
export class AdminModule {}
