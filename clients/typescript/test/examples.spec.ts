import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// the client's own TypeScript (5.x, openapi-typescript's peer), not the service's
const ts = require('../node_modules/typescript') as typeof import('typescript');

const CLIENT = join(__dirname, '..');
const EXAMPLE = join(CLIENT, 'examples', 'every-event.ts');

/** The diagnostics of the client's example config (tsconfig.examples.json), with `example` in place of every-event.ts. */
function diagnostics(example?: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(CLIENT, 'tsconfig.examples.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } })!;
  const host = ts.createCompilerHost(parsed.options);
  if (example !== undefined) {
    const read = host.readFile.bind(host);
    host.readFile = (file) => (file === EXAMPLE ? example : read(file));
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (file, lang, onError, create) => (file === EXAMPLE ? ts.createSourceFile(file, example, lang) : getSourceFile(file, lang, onError, create));
  }
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, host });
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${d.file.fileName}:${d.start}: ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

/**
 * The typed events: a sample that switches over every event type of the OpenAPI document
 * (examples/every-event.ts, reading each type's own fields) compiles with the client's
 * tsconfig, and the same sample without one of its cases does not.
 */
describe('the typed client\'s events', () => {
  jest.setTimeout(180_000);

  it('examples/every-event.ts type-checks: one type per event, narrowed by `type`, the switch exhaustive', () => {
    expect(diagnostics()).toEqual([]);
  });

  it('leaving out one event type\'s case is a compile error (the union is closed)', () => {
    const source = readFileSync(EXAMPLE, 'utf8');
    const withoutQueued = source.replace(/\n {4}case 'queued':\n.*\n/, '\n');
    expect(withoutQueued).not.toBe(source);
    const errors = diagnostics(withoutQueued);
    expect(errors).toEqual([expect.stringMatching(/Type '.*' is not assignable to type 'never'/)]);
  });

  it('a field of another event type is a compile error', () => {
    const source = readFileSync(EXAMPLE, 'utf8').replace("case 'chunk':\n      return event.content;", "case 'chunk':\n      return event.fullContent;");
    expect(diagnostics(source)).toEqual([expect.stringContaining("Property 'fullContent' does not exist")]);
  });
});

