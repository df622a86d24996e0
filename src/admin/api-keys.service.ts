import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import type { KeyResolver, Principal } from '../common/auth/principal';
import { ApiKeyRepository } from './repositories/api-key.repository';

/** The database keys as the ApiKeyGuard sees them, and the start-up line saying which mode runs. */
@Injectable()
export class ApiKeysService implements KeyResolver, OnApplicationBootstrap {
  readonly store: ApiKeyRepository;
  /** once a key exists the service stays keyed (rows are never deleted), so true is cached */
  private keyed = false;

  constructor(
    ds: DataSource,
    private readonly config: AppConfigService,
  ) {
    this.store = new ApiKeyRepository(ds);
  }

  resolve(token: string): Promise<Principal | null> {
    return this.store.resolve(token);
  }

  /** Whether API_KEYS names any key (admin keys for every project that no route can revoke). */
  hasEnvKeys(): boolean {
    return this.config.list('API_KEYS').length > 0;
  }

  async anyKeys(): Promise<boolean> {
    if (!this.keyed) this.keyed = await this.store.anyKeys();
    return this.keyed;
  }

  /**
   * Whether anyone can be let in: `local` (no key anywhere, everyone is the local admin), `keys`
   * (keys are required and at least one is valid) or `no_valid_key` (a database key exists, so
   * keys are required, but every one is revoked or expired and API_KEYS is unset: every keyed
   * route answers 401 until a key is created or API_KEYS is set).
   */
  async authStatus(): Promise<AuthStatus> {
    if (this.hasEnvKeys()) return { status: 'keys' };
    if (!(await this.anyKeys())) return { status: 'local' };
    if (await this.store.anyValidKeys()) return { status: 'keys' };
    return { status: 'no_valid_key', message: NO_VALID_KEY };
  }

  async onApplicationBootstrap(): Promise<void> {
    const env = this.config.list('API_KEYS').length;
    const log = new Logger('Auth');
    const auth = await this.authStatus();
    if (auth.status === 'local') {
      log.warn('no API key configured (API_KEYS unset, no database key): single-user local mode, every request has full access. Set API_KEYS or create a key (npm run keys) before exposing the service.');
    } else if (auth.status === 'no_valid_key') {
      // the service is up but nobody can use it; say so once, loudly, with the way out
      log.error(auth.message);
    } else {
      log.log(`API keys required: ${env} from API_KEYS (admin), database keys ${this.keyed ? 'present' : 'none yet'}`);
    }
  }
}

export interface AuthStatus {
  status: 'local' | 'keys' | 'no_valid_key';
  /** with `no_valid_key`: what is wrong and how to recover */
  message?: string;
}

const NO_VALID_KEY =
  "API keys are required but no valid key exists: every database key is revoked or expired and API_KEYS is unset, so every route but the public ones answers 401. To recover, create a key on this service's database with `npm run keys -- create <name> '*' admin` (stop the service first when it uses embedded PGlite), or set API_KEYS and restart.";
