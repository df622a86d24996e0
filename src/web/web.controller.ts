import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/auth/public.decorator';
import { ASSET_HEADERS, PAGE_HEADERS } from './content-security-policy';
import { ASSET_NAME, ASSETS_DIR, packageFile, PUBLIC_DIR, VENDOR_FILES } from './static-files';

/**
 * The chat page (`/`), the debug panel (`/debug`), their scripts and styles (`/assets/*`) and
 * the two browser libraries (`/vendor/*`). Static files only: the pages talk to the HTTP API
 * like any other client. Public: they hold no data; the page asks the user for a key.
 */
@Public()
@ApiExcludeController()
@Controller()
export class WebController {
  /** resolved once, on first use: a missing package is a 404 that says so, not a boot failure */
  private vendorPaths: Map<string, string> | null = null;

  @Get()
  index(@Res() res: Response): void {
    this.page(res, 'index.html');
  }

  @Get('debug')
  debug(@Res() res: Response): void {
    this.page(res, 'debug.html');
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: Response): void {
    if (!ASSET_NAME.test(file)) throw new NotFoundException(`No asset ${file}`);
    this.send(res, file, { root: ASSETS_DIR, headers: ASSET_HEADERS }, `/assets/${file}`);
  }

  @Get('vendor/:file')
  vendor(@Param('file') file: string, @Res() res: Response): void {
    const path = this.vendorPath(file);
    if (!path) throw new NotFoundException(`No vendor file ${file}; there are ${Object.keys(VENDOR_FILES).join(', ')}`);
    this.send(res, path, { headers: { ...ASSET_HEADERS, 'Content-Type': 'text/javascript; charset=utf-8' } }, `/vendor/${file}`);
  }

  private page(res: Response, file: string): void {
    this.send(res, file, { root: PUBLIC_DIR, headers: PAGE_HEADERS }, file);
  }

  private vendorPath(file: string): string | undefined {
    if (!Object.hasOwn(VENDOR_FILES, file)) return undefined;
    this.vendorPaths ??= new Map(Object.entries(VENDOR_FILES).map(([name, f]) => [name, packageFile(f.pkg, f.file)]));
    return this.vendorPaths.get(file);
  }

  /** sendFile with a JSON 404 in Nest's shape when the file is not there. */
  private send(res: Response, path: string, options: { root?: string; headers: Readonly<Record<string, string>> }, shown: string): void {
    res.sendFile(path, { root: options.root, headers: { ...options.headers }, dotfiles: 'deny' }, (err) => {
      if (!err || res.headersSent) return;
      res.status(404).json({ statusCode: 404, error: 'Not Found', message: `No file ${shown}` });
    });
  }
}
