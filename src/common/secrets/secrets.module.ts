import { Global, Module } from '@nestjs/common';
import { AppConfigService } from '../../config/app-config.service';
import { SecretRegistry } from './secret-registry';

/** One SecretRegistry for the whole app, seeded from the configuration; modules add to it as they start. */
@Global()
@Module({
  providers: [{ provide: SecretRegistry, useFactory: (config: AppConfigService) => SecretRegistry.fromConfig(config), inject: [AppConfigService] }],
  exports: [SecretRegistry],
})
export class SecretsModule {}
