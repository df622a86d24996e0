import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { OrionException } from './common/errors/orion.exception';

/**
 * Every code of every module's exception answers with a 4xx: a code whose status is missing or
 * not a client error would reach the client as a 500 (or a wrong status) for a request error.
 * The modules are found on disk, so a new `*.exception.ts` is checked without being listed here.
 */
function exceptionFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceDir(e.name) ? exceptionFiles(p) : [];
    return e.name.endsWith('.exception.ts') && p !== join(__dirname, 'common/errors/orion.exception.ts') ? [p] : [];
  });
}
const sourceDir = (name: string) => name !== 'public' && name !== 'node_modules';

type ExceptionClass = (new (code: string, message: string) => OrionException) & { statuses?: Record<string, number> };

function modulesOf(file: string): { name: string; cls: ExceptionClass; codes: string[] } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const exports = require(file) as Record<string, unknown>;
  const classes = Object.values(exports).filter((v): v is ExceptionClass => typeof v === 'function' && v.prototype instanceof OrionException);
  const enums = Object.entries(exports).filter(([k, v]) => k.endsWith('ExceptionCode') && !!v && typeof v === 'object');
  expect(classes).toHaveLength(1);
  expect(enums).toHaveLength(1);
  return { name: relative(__dirname, file), cls: classes[0], codes: Object.values(enums[0][1] as Record<string, string>) };
}

describe('exception codes', () => {
  const modules = exceptionFiles(__dirname).map(modulesOf);

  it('finds the exception of every module', () => {
    expect(modules.map((m) => m.name).sort()).toEqual(
      expect.arrayContaining([
        'chat/chat.exception.ts',
        'knowledge/knowledge.exception.ts',
        'orchestration/orchestration.exception.ts',
        'runs/runs.exception.ts',
        'tools/tools.exception.ts',
      ]),
    );
  });

  it('maps every code to a 4xx status', () => {
    const wrong = modules.flatMap(({ name, cls, codes }) =>
      codes.map((code) => ({ name, code, status: new cls(code, 'm').httpStatus() })).filter(({ status }) => !(status >= 400 && status < 500)),
    );
    expect(wrong).toEqual([]);
  });

  it('holds no status for a code that does not exist', () => {
    for (const { cls, codes } of modules) expect(Object.keys(cls.statuses ?? {}).sort()).toEqual([...codes].sort());
  });

  it('answers 500 for a code outside its table', () => {
    for (const { cls } of modules) expect(new cls('not_a_code', 'm').httpStatus()).toBe(500);
  });
});
