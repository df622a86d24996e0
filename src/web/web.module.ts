import { Module } from '@nestjs/common';
import { WebController } from './web.controller';

export { PUBLIC_DIR } from './static-files';

/** The chat page and the debug panel (issue #7): static files that use the HTTP API only. */
@Module({ controllers: [WebController] })
export class WebModule {}
