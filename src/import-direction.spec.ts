import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Dependencies run one way: a module imports only from itself and the modules below it.
 * Controllers are the HTTP edge (the top), whatever folder they live in; the root files
 * (main, bootstrap, app.module) assemble everything. `config` (validated environment, no imports)
 * sits under `common`, whose API-key guard reads it. `observability` turns trace records and LLM
 * events into metrics and spans, beside orchestration: it reads the modules below, none reads it.
 * `openai-compat` is an edge like web: another wire format over the chat turns; so are `mcp-server`
 * (Orion as an MCP tool) and `a2a` (Orion as an A2A agent).
 */
const ORDER = ['config', 'common', 'database', 'trace', 'knowledge', 'tools|llm', 'orchestration|observability', 'webhooks', 'runs', 'chat', 'web|health|admin|ui-stream|openai-compat|mcp-server|a2a'];
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

/**
 * SQL lives in `database/` (the data source, migrations, statement helpers) and in a module's
 * `repositories/` folder, nowhere else: services, guards and controllers ask a repository, or a
 * port a repository implements (`common` sits below the database). A folder rather than a file
 * suffix, so the rule and the tree say the same thing. Found: a `.query(` call on a data source,
 * manager, runner or repository, or with a literal statement; a query builder; a prepared query;
 * a string or template literal holding a statement (uppercase keywords, as the SQL here is written).
 */
const SQL_SIGNS: Array<[string, RegExp]> = [
  ['.query(', /\b(?:ds|dataSource|manager|m|qr|queryRunner|runner|connection|repo|repository)\s*\.\s*query\s*\(|\.query\s*\(\s*[`'"]/],
  ['createQueryBuilder', /\bcreateQueryBuilder\s*\(/],
  ['preparedQuery', /\bpreparedQuery\s*\(/],
];
const LITERAL = /`(?:[^`\\]|\\.)*`|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g;
const STATEMENT = /\bSELECT\b[\s\S]*\bFROM\b|\bSELECT\s+(?:\d|pg_|count\()|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+(?:AS\s+\w+\s+)?SET\b|\bDELETE\s+FROM\b/;

/** Where `file` issues SQL although it may not (empty when it may, or does not). */
function sqlOutsideRepositories(file: string, text = readFileSync(file, 'utf8')): string[] {
  const rel = relative(SRC, file);
  if (rel.startsWith('database/') || rel.split('/').includes('repositories')) return [];
  const found = SQL_SIGNS.filter(([, re]) => re.test(text)).map(([name]) => name);
  for (const m of text.matchAll(LITERAL)) {
    if (STATEMENT.test(m[0])) found.push(`statement ${m[0].slice(0, 40).replace(/\s+/g, ' ')}`);
  }
  return found.map((f) => `${rel}: ${f}`);
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

  it('no file outside database/ and repositories/ issues SQL, controllers included', () => {
    const violations = sourceFiles(SRC).flatMap((f) => sqlOutsideRepositories(f));
    expect(violations).toEqual([]);
  });

  it('fails when a guard or a controller issues SQL', () => {
    const guard = join(SRC, 'common', 'auth', 'project-scope.guard.ts');
    const injected = `${readFileSync(guard, 'utf8')}\nconst owner = (ds: DataSource, id: string) => ds.query('SELECT project_id FROM runs WHERE request_id = $1', [id]);\n`;
    expect(sqlOutsideRepositories(guard, injected)).toEqual(['common/auth/project-scope.guard.ts: .query(', "common/auth/project-scope.guard.ts: statement 'SELECT project_id FROM runs WHERE reque"]);
    const controller = join(SRC, 'health', 'health.controller.ts');
    expect(sqlOutsideRepositories(controller, `${readFileSync(controller, 'utf8')}\nawait this.ds.manager.query('SELECT 1');\n`)).toEqual([
      'health/health.controller.ts: .query(',
      "health/health.controller.ts: statement 'SELECT 1'",
    ]);
    expect(sqlOutsideRepositories(join(SRC, 'trace', 'trace.service.ts'), 'const qb = this.events.createQueryBuilder("t");')).toEqual(['trace/trace.service.ts: createQueryBuilder']);
    const template = 'await run(`WITH u AS (UPDATE runs SET status = $2 WHERE request_id = $1 RETURNING 1) SELECT 1`);';
    expect(sqlOutsideRepositories(join(SRC, 'runs', 'runs.service.ts'), template)).toEqual(['runs/runs.service.ts: statement `WITH u AS (UPDATE runs SET status = $2 ']);
    // where SQL belongs, the same text is fine
    expect(sqlOutsideRepositories(join(SRC, 'runs', 'repositories', 'run.repository.ts'), template)).toEqual([]);
    expect(sqlOutsideRepositories(join(SRC, 'database', 'migrations', 'x.ts'), template)).toEqual([]);
  });

  it('no service imports express', () => {
    const offenders = sourceFiles(SRC).filter((f) => f.endsWith('.service.ts') && /from\s*['"]express['"]/.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(SRC, f))).toEqual([]);
  });
});
