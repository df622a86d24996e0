import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Dependencies run one way: a module imports only from itself and the modules below it.
 * Controllers are the HTTP edge (the top), whatever folder they live in; the root files
 * (main, bootstrap, app.module) assemble everything. `config` (validated environment, no imports)
 * sits under `common`, whose API-key guard reads it. `observability` turns trace records and LLM
 * events into metrics and spans, beside orchestration: it reads the modules below, none reads it.
 */
const ORDER = ['config', 'common', 'database', 'trace', 'knowledge', 'tools|llm', 'orchestration|observability', 'runs', 'chat', 'web|health|admin'];
const rank = (folder: string): number => ORDER.findIndex((layer) => layer.split('|').includes(folder));

const SRC = __dirname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'public' ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [p] : [];
  });
}

/** Every relative import of a file, as the top folder under src/ it points into. */
function importedFolders(file: string, text = readFileSync(file, 'utf8')): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = relative(SRC, resolve(dirname(file), m[1]));
    if (!target.startsWith('..')) out.push(target.split('/')[0]);
  }
  return out;
}

/** The imports of `file` that go up the order (empty when it only looks down). */
function upwardImports(file: string, text?: string): string[] {
  const rel = relative(SRC, file);
  const folder = rel.split('/')[0];
  if (!rel.includes('/') || rel.endsWith('.controller.ts')) return [];
  const own = rank(folder);
  if (own < 0) return [`${rel}: folder "${folder}" has no place in the order`];
  return importedFolders(file, text)
    .filter((to) => to !== folder && (rank(to) < 0 || rank(to) > own))
    .map((to) => `${rel} imports ${to}`);
}

describe('import direction', () => {
  it('no module imports from a module above it', () => {
    const violations = sourceFiles(SRC).flatMap((f) => upwardImports(f));
    expect(violations).toEqual([]);
  });

  it('fails when an upward import is added', () => {
    const file = join(SRC, 'knowledge', 'knowledge.service.ts');
    const text = `${readFileSync(file, 'utf8')}\nimport { ToolFailure } from '../tools/tool-definition';\n`;
    expect(upwardImports(file, text)).toEqual(['knowledge/knowledge.service.ts imports tools']);
    expect(upwardImports(join(SRC, 'runs', 'runs.service.ts'), "import { ChatService } from '../chat/chat.service';")).toEqual(['runs/runs.service.ts imports chat']);
    expect(upwardImports(join(SRC, 'runs', 'runs.service.ts'), 'import type { Turn } from "../chat/chat.service";')).toEqual(['runs/runs.service.ts imports chat']);
  });

  it('no service imports express', () => {
    const offenders = sourceFiles(SRC).filter((f) => f.endsWith('.service.ts') && /from\s*['"]express['"]/.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(SRC, f))).toEqual([]);
  });
});
