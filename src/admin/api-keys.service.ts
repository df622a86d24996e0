import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import type { KeyResolver, Principal } from '../common/auth/principal';
import { ApiKeysStore } from './api-keys.store';

/** The database keys as the ApiKeyGuard sees them, and the start-up line saying which mode runs. */
@Injectable()
export class ApiKeysService implements KeyResolver, OnApplicationBootstrap {
  readonly store: ApiKeysStore;
  /** once a key exists the service stays keyed (rows are never deleted), so true is cached */
  private keyed = false;

  constructor(
    ds: DataSource,
    private readonly config: AppConfigService,
  ) {
    this.store = new ApiKeysStore(ds);
  }

  resolve(token: string): Promise<Principal | null> {
    return this.store.resolve(token);
  }

  async anyKeys(): Promise<boolean> {
    if (!this.keyed) this.keyed = await this.store.anyKeys();
    return this.keyed;
  }

  async onApplicationBootstrap(): Promise<void> {
    const env = this.config.list('API_KEYS').length;
    const log = new Logger('Auth');
    if (env === 0 && !(await this.anyKeys())) {
      log.warn('no API key configured (API_KEYS unset, no database key): single-user local mode, every request has full access. Set API_KEYS or create a key (npm run keys) before exposing the service.');
    } else {
      log.log(`API keys required: ${env} from API_KEYS (admin), database keys ${this.keyed ? 'present' : 'none yet'}`);
    }
  }
}
