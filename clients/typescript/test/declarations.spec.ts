import { join } from 'node:path';

// the client's own TypeScript (5.x, openapi-typescript's peer), not the service's
const ts = require('../node_modules/typescript') as typeof import('typescript');

const CLIENT = join(__dirname, '..');

/** The .d.ts files the client's tsconfig emits (in memory), by file name. */
function emittedDeclarations(): Map<string, string> {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(CLIENT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } })!;
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, emitDeclarationOnly: true, sourceMap: false, declarationMap: false } });
  const out = new Map<string, string>();
  program.emit(undefined, (file, text) => {
    if (file.endsWith('.d.ts')) out.set(file.slice(file.lastIndexOf('/dist/') + 1), text);
  });
  return out;
}

/** `X.Y` type references whose `X` is a default import: a function, not a namespace, in the emitting file. */
function defaultImportsUsedAsNamespaces(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const defaults = new Set<string>();
  for (const s of source.statements) if (ts.isImportDeclaration(s) && s.importClause?.name) defaults.add(s.importClause.name.text);
  const found: string[] = [];
  const visit = (node: import('typescript').Node) => {
    if (ts.isQualifiedName(node) && ts.isIdentifier(node.left) && defaults.has(node.left.text)) found.push(`${file}: ${node.getText(source)}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Issue #42: the shipped declarations type-check on TypeScript 7 too. An inferred type could be
 * written as `createClient.Client<…>` (openapi-fetch's default export used as a namespace), which
 * TypeScript 6 accepts and 7 rejects with TS2503 "Cannot find namespace 'createClient'" unless
 * skipLibCheck. No emitted declaration may name a type through a default import.
 */
describe("the typed client's emitted declarations", () => {
  jest.setTimeout(180_000);

  it('name every imported type by a named import, never through a default import used as a namespace', () => {
    const emitted = emittedDeclarations();
    expect([...emitted.keys()]).toEqual(expect.arrayContaining(['dist/client.d.ts', 'dist/index.d.ts']));
    expect([...emitted].flatMap(([file, text]) => defaultImportsUsedAsNamespaces(file, text))).toEqual([]);
    // orion.api is declared as the client's own named type
    expect(emitted.get('dist/client.d.ts')).toMatch(/\bapi: OrionApi;/);
  });

  it('the check finds such a reference (a guard on the check itself)', () => {
    expect(defaultImportsUsedAsNamespaces('x.d.ts', "import createClient from 'openapi-fetch';\nexport declare const api: createClient.Client<{}>;\n")).toEqual(['x.d.ts: createClient.Client']);
  });
});
