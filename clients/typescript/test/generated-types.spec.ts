import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLIENT = join(__dirname, '..');
const COMMITTED = join(CLIENT, 'src', 'generated', 'openapi.ts');

/**
 * The client's generated types are those of the committed docs/openapi.json: the package's own
 * `generate` script (what `npm run client:generate` runs) is run again into a temporary file,
 * with its own arguments, and the result must equal the committed file.
 */
describe('clients/typescript/src/generated/openapi.ts', () => {
  jest.setTimeout(120_000);

  it('is what `npm run client:generate` makes of docs/openapi.json (regenerate it when this fails)', () => {
    const script = (JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.generate;
    const [command, ...args] = script.split(/\s+/);
    expect(command).toBe('openapi-typescript');
    const out = args.indexOf('-o');
    expect(args[out + 1]).toBe('src/generated/openapi.ts');
    const dir = mkdtempSync(join(tmpdir(), 'orion-client-types-'));
    try {
      args[out + 1] = join(dir, 'openapi.ts');
      const cli = join(CLIENT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
      const run = spawnSync(process.execPath, [cli, ...args], { cwd: CLIENT, encoding: 'utf8' });
      expect(run.status).toBe(0);
      const fresh = readFileSync(args[out + 1], 'utf8');
      if (fresh !== readFileSync(COMMITTED, 'utf8')) throw new Error('src/generated/openapi.ts is stale: docs/openapi.json changed since it was generated. Run: npm run client:generate');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
