import { mkdir } from 'node:fs/promises';
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { projectFolder } from '../common/workspace/workspace-path.util';

/** The project every route uses when a request names none. */
export const DEFAULT_PROJECT_ID = 'default';

/**
 * Creates `WORKSPACE_ROOT/default` at start-up when it is missing, so that a fresh service's
 * default project exists: `list_files` answers with an empty listing and an ingest indexes
 * nothing, instead of both failing with "not found" until someone creates the folder by hand
 * (Swagger's examples run against exactly that). Only the default project's folder: other
 * projects are folders their owners create. A folder that cannot be made (a read-only mount)
 * is logged and left alone; the file tools then say what is missing, as before.
 */
@Injectable()
export class DefaultProjectFolder implements OnApplicationBootstrap {
  private readonly logger = new Logger('Workspace');

  constructor(private readonly config: AppConfigService) {}

  async onApplicationBootstrap(): Promise<void> {
    const folder = projectFolder(this.config.get('WORKSPACE_ROOT'), DEFAULT_PROJECT_ID);
    try {
      await mkdir(folder, { recursive: true });
    } catch (err) {
      this.logger.warn(`could not create the default project's folder ${folder}: ${(err as Error).message}`);
    }
  }
}
