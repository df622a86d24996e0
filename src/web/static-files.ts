import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where the pages live in both `src/` (tests, tsx) and `dist/` (built; nest-cli copies `web/public/**`). */
export const PUBLIC_DIR = join(__dirname, 'public');

/** The pages' own scripts and styles, served at `/assets/<name>`. */
export const ASSETS_DIR = join(PUBLIC_DIR, 'assets');

/** A flat file name of ours: no folders, no dots but the extension, so no path can leave ASSETS_DIR. */
export const ASSET_NAME = /^[a-z0-9][a-z0-9-]*\.(js|css)$/;

/**
 * Browser builds of the two libraries the chat page uses, served at `/vendor/<name>` straight
 * from node_modules so the installed (audited, lock-filed) version is the one that runs.
 * Both are UMD files that define a global (`marked`, `DOMPurify`) when loaded by a script tag.
 */
export const VENDOR_FILES: Readonly<Record<string, { pkg: string; file: string }>> = {
  'marked.js': { pkg: 'marked', file: 'lib/marked.umd.js' },
  'purify.js': { pkg: 'dompurify', file: 'dist/purify.js' },
};

/**
 * Absolute path of a file inside an installed package. Resolves the package's entry point with
 * `require.resolve` (their `exports` maps hide the browser builds and even `package.json`), then
 * walks up to the folder whose package.json names the package.
 */
export function packageFile(pkg: string, file: string): string {
  let dir = dirname(require.resolve(pkg));
  while (true) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === pkg) {
      const path = join(dir, file);
      if (!existsSync(path)) throw new Error(`${pkg} has no ${file}; is the installed version the one package.json asks for?`);
      return path;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package.json of ${pkg} not found above ${require.resolve(pkg)}`);
    dir = parent;
  }
}
