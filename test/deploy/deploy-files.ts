import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { load } from 'js-yaml';

/** Reading the deployment files of the repository the way Docker and Compose read them. */
export const ROOT = join(__dirname, '..', '..');

export const readYaml = <T = Record<string, any>>(path: string): T => load(readFileSync(join(ROOT, path), 'utf8')) as T;

/** `KEY=value` lines of a Compose env file (comments and blank lines skipped). */
export function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(ROOT, path), 'utf8').split('\n')) {
    const m = /^\s*([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) out[m[1]] = m[2].trim();
  }
  return out;
}

/**
 * Compose's `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?message}` and
 * `${NAME?message}` interpolation against `env` (`$$` is a literal `$`). A required variable that is
 * missing throws, as Compose refuses the whole file then.
 */
export function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Z_][A-Z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (whole === '$$') return '$';
    const v = env[name!];
    if (op === ':-') return v ? v : (arg ?? '');
    if (op === '-') return v !== undefined ? v : (arg ?? '');
    if ((op === ':?' && !v) || (op === '?' && v === undefined)) throw new Error(`required variable ${name} is missing a value: ${arg}`);
    return v ?? '';
  });
}

/** A parsed compose file with every string interpolated, the form Compose validates and runs. */
export function interpolateTree<T>(node: T, env: Record<string, string>): T {
  if (typeof node === 'string') return interpolate(node, env) as T;
  if (Array.isArray(node)) return node.map((n) => interpolateTree(n, env)) as T;
  if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateTree(v, env)])) as T;
  return node;
}

export interface DockerInstruction {
  stage: number;
  keyword: string;
  args: string;
}

/** Dockerfile instructions (continuation lines joined, comments dropped), numbered by build stage. */
export function readDockerfile(path = 'Dockerfile'): DockerInstruction[] {
  const logical = readFileSync(resolve(ROOT, path), 'utf8')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  let stage = -1;
  return logical.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    if (keyword.toUpperCase() === 'FROM') stage++;
    return { stage, keyword: keyword.toUpperCase(), args: rest.join(' ') };
  });
}

/** Patterns of .dockerignore, and whether a context path is excluded by one of them. */
export function dockerignore(): (path: string) => boolean {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const toRegex = (p: string) => new RegExp(`^${p.replace(/^\/+|\/+$/g, '').replace(/[.+^$()|[\]{}]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
  const rules = patterns.map(toRegex);
  return (path) => rules.some((r) => r.test(path.replace(/^\.\//, '').replace(/\/+$/, '')));
}

export const exists = (path: string) => existsSync(join(ROOT, path));
