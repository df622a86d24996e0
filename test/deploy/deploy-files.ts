import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseDotenv } from 'dotenv';
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
 * `${NAME?message}` interpolation against `env` (`$$` is a literal `$`), nested as Compose nests it
 * (`${A:-${B:-default}}`: a default or message is interpolated in turn). A required variable that
 * is missing throws, as Compose refuses the whole file then.
 */
export function interpolate(value: string, env: Record<string, string>): string {
  let out = '';
  let i = 0;
  while (i < value.length) {
    if (value.startsWith('$$', i)) {
      out += '$';
      i += 2;
      continue;
    }
    const m = value.startsWith('${', i) ? /^\$\{([A-Z_][A-Z0-9_]*)(:?[-?])?/.exec(value.slice(i)) : null;
    if (!m) {
      out += value[i++];
      continue;
    }
    // the argument runs to the brace that closes this ${, past any nested ${…}
    let j = i + m[0].length;
    let depth = 1;
    const argStart = j;
    for (; j < value.length; j++) {
      if (value.startsWith('${', j)) {
        depth++;
        j++;
      } else if (value[j] === '}' && --depth === 0) break;
    }
    if (depth !== 0) throw new Error(`unclosed \${ in ${value}`);
    const [, name, op] = m;
    const arg = () => interpolate(value.slice(argStart, j), env);
    if (!op && j !== argStart) throw new Error(`invalid interpolation ${value.slice(i, j + 1)}`);
    const v = env[name];
    if (op === ':-') out += v ? v : arg();
    else if (op === '-') out += v !== undefined ? v : arg();
    else if ((op === ':?' && !v) || (op === '?' && v === undefined)) throw new Error(`required variable ${name} is missing a value: ${arg()}`);
    else out += v ?? '';
    i = j + 1;
  }
  return out;
}

/** A parsed compose file with every string interpolated, the form Compose validates and runs. */
export function interpolateTree<T>(node: T, env: Record<string, string>): T {
  if (typeof node === 'string') return interpolate(node, env) as T;
  if (Array.isArray(node)) return node.map((n) => interpolateTree(n, env)) as T;
  if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, interpolateTree(v, env)])) as T;
  return node;
}

/** A service's `env_file` and `environment` as the compose file may write them. */
export interface EnvService {
  env_file?: string | Array<string | { path: string; required?: boolean }>;
  environment?: Record<string, string | number | boolean | null> | string[];
}

/**
 * The environment a service's container starts with, as Compose builds it without a Docker engine
 * (no `docker compose` here to render it; the rules are Compose's documented ones, see
 * docs.docker.com/compose/how-tos/environment-variables/envvars-precedence/): the `env_file`
 * entries in order, a later file winning, one with `required: false` skipped when missing (`files`
 * gives a file's text, undefined when it does not exist), each parsed as a dotenv file; then
 * `environment`, interpolated from `interpolation` (the shell and `.env`, or the --env-file
 * files), which wins over every env file. The image's own ENV is not included.
 */
export function containerEnv(service: EnvService, interpolation: Record<string, string>, files: (path: string) => string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = service.env_file === undefined ? [] : Array.isArray(service.env_file) ? service.env_file : [service.env_file];
  for (const entry of entries) {
    const { path, required = true } = typeof entry === 'string' ? { path: entry } : entry;
    const text = files(path);
    if (text === undefined) {
      if (required) throw new Error(`env file ${path} not found`);
      continue;
    }
    Object.assign(out, parseDotenv(text));
  }
  const environment = Array.isArray(service.environment)
    ? Object.fromEntries(service.environment.map((e) => [e.split('=')[0], e.includes('=') ? e.slice(e.indexOf('=') + 1) : null]))
    : (service.environment ?? {});
  for (const [key, value] of Object.entries(environment)) {
    // a bare name takes the interpolation environment's value; this file does not use that form
    if (value === null) throw new Error(`environment ${key} has no value: Compose versions disagree on whether an env_file value survives it`);
    out[key] = interpolate(String(value), interpolation);
  }
  return out;
}

/** A file of the repository as `containerEnv` reads env files: its text, or undefined when it does not exist. */
export const repositoryFile = (path: string): string | undefined => (exists(path) ? readFileSync(join(ROOT, path), 'utf8') : undefined);

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
