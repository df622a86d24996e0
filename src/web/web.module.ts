import { Controller, Get, Module, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { join } from 'node:path';

/** Where the static page lives in both `src/` (tests, tsx) and `dist/src/` (built; nest-cli copies assets). */
export const PUBLIC_DIR = join(__dirname, 'public');

@ApiExcludeController()
@Controller()
export class WebController {
  @Get()
  index(@Res() res: Response): void {
    res.sendFile(join(PUBLIC_DIR, 'index.html'));
  }

  @Get('debug')
  debug(@Res() res: Response): void {
    res.sendFile(join(PUBLIC_DIR, 'debug.html'));
  }
}

/** The chat page and the debug panel: static files that use the HTTP API only. */
@Module({ controllers: [WebController] })
export class WebModule {}
