import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getMetadataStorage } from 'class-validator';
import { parse as parseDotenv } from 'dotenv';
import { EnvironmentVariables, validateEnv } from '../../src/config/env.schema';
import { composeErrors } from './compose-schema';
import { loadMcpConfig, resolveMcpConfigSource } from '../../src/tools/mcp/mcp-config';
import { containerEnv, dockerignore, exists, interpolate, interpolateTree, readDockerfile, readEnvFile, readYaml, repositoryFile, ROOT, type EnvService } from './deploy-files';

/**
 * The compose stack, the Dockerfile and the configs under deploy/ as Docker would read them (no
 * Docker engine is needed): services and profiles, health checks, the wiring between them, and
 * Orion's environment validated by Orion's own configuration rules for each documented way to
 * start the stack.
 */
type Service = {
  image?: string;
  build?: unknown;
  profiles?: string[];
  restart?: string;
  environment?: Record<string, string>;
  env_file?: EnvService['env_file'];
  entrypoint?: string[];
  init?: boolean;
  user?: string;
  depends_on?: Record<string, { condition?: string; required?: boolean }>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  command?: string[];
  ports?: string[];
};
const compose = readYaml<{ services: Record<string, Service>; volumes: Record<string, unknown> }>('docker-compose.yml');
const services = compose.services;
const inProfile = (name: string) => services[name]?.profiles ?? [];
const hostOf = (url: string) => new URL(url);

/**
 * Orion's environment in the compose stack when started with these --env-file files and no .env
 * (a developer's own .env in the checkout is never read).
 */
function appEnv(...envFiles: string[]): Record<string, string> {
  const shell = Object.assign({}, ...envFiles.map(readEnvFile)) as Record<string, string>;
  return containerEnv(services.app, shell, (path) => (path === '.env' ? undefined : repositoryFile(path)));
}

/** Names of every variable Orion's configuration declares. */
const orionVariables = new Set(
  getMetadataStorage()
    .getTargetValidationMetadatas(EnvironmentVariables, '', true, false)
    .map((m) => m.propertyName),
);

/** The metric names Orion's /metrics exposes that the dashboard relies on. */
const ORION_METRICS = ['orion_turns_total', 'orion_tool_executions_total', 'orion_turn_duration_seconds', 'orion_model_call_duration_seconds', 'orion_open_streams'];

describe('docker-compose.yml', () => {
  it('starts PostgreSQL with pgvector, SearXNG and Orion by default; Ollama and the observability stack only in their profiles', () => {
    const byDefault = Object.keys(services).filter((s) => inProfile(s).length === 0);
    expect(byDefault.sort()).toEqual(['app', 'db', 'searxng', 'workspace-init']);
    expect(services.db.image).toMatch(/^pgvector\/pgvector:/);
    expect(services.app.build).toBe('.');
    expect(['ollama', 'ollama-pull'].map(inProfile)).toEqual([['ollama'], ['ollama']]);
    expect(['otel-collector', 'prometheus', 'grafana'].map(inProfile)).toEqual([['observability'], ['observability'], ['observability']]);
  });

  it('restarts every service on failure, Orion on any exit but a stop (its health check may end it), and names a tag for every image', () => {
    for (const [name, s] of Object.entries(services)) {
      expect([name, s.restart]).toEqual([name, name === 'app' ? 'unless-stopped' : 'on-failure']);
      if (s.image) expect([name, s.image]).toEqual([name, expect.stringMatching(/^[\w./-]+:[\w.-]+$/)]);
    }
  });

  it('health-checks every long-running service that has a client to check with; Orion by /api/health/ready', () => {
    const unchecked = Object.keys(services).filter((s) => !services[s].healthcheck);
    // ollama-pull is a one-shot job; the collector image has no shell or HTTP client; Jaeger is
    // reached through the collector's retried exports
    expect(unchecked.sort()).toEqual(['jaeger', 'ollama-pull', 'otel-collector', 'workspace-init']);
    // the image's own check (scripts/container-health.mjs, which asks /api/health/ready)
    expect(services.app.healthcheck!.test).toEqual(['CMD', ...JSON.parse(readDockerfile().find((st) => st.keyword === 'HEALTHCHECK')!.args.replace(/^.*?CMD\s+/, ''))]);
    expect(readFileSync(join(ROOT, 'scripts', 'container-health.mjs'), 'utf8')).toMatch(/http:\/\/127\.0\.0\.1:\$\{port\}\/api\/health\/ready/);
  });

  it('an unhealthy Orion is restarted: its check ends it (after 5 failures) and nothing but a stop keeps it down; the init lets SIGKILL reach it', () => {
    const hc = services.app.healthcheck as { test: string[]; retries?: number };
    expect(hc.test).toEqual(['CMD', 'node', 'scripts/container-health.mjs']);
    // the check's default limit is Docker's retries: Orion is ended when Docker would call it unhealthy
    expect(readFileSync(join(ROOT, 'scripts', 'container-health.mjs'), 'utf8')).toContain(`ORION_HEALTH_RESTART_AFTER ?? ${hc.retries}`);
    expect(services.app.restart).toBe('unless-stopped');
    expect(services.app.init).toBe(true);
  });

  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0 ? it : it.skip;
  asRoot('workspace-init hands a root-owned ./workspace (what Docker creates) to uid 1000, the node user, and leaves a folder of its own user as it is', () => {
    const [shell, flag, script] = interpolateTree(services['workspace-init'].command!, {});
    const mount = services['workspace-init'].volumes![0].split(':')[1];
    const run = (owner: number) => {
      const dir = mkdtempSync(join(tmpdir(), 'orion-ws-init-'));
      chownSync(dir, owner, owner);
      const r = spawnSync(shell, [flag, script.replaceAll(mount, dir)], { encoding: 'utf8' });
      const uid = statSync(dir).uid;
      rmSync(dir, { recursive: true, force: true });
      return [r.status, uid];
    };
    expect(run(0)).toEqual([0, 1000]);
    expect(run(1234)).toEqual([0, 1234]);
  });

  it('starts Orion after its one-shot jobs succeeded: the workspace handed to the node user, and (Ollama profile) the model pulled', () => {
    expect(services.app.depends_on!['workspace-init']).toEqual({ condition: 'service_completed_successfully' });
    expect(services.app.depends_on!['ollama-pull']).toEqual({ condition: 'service_completed_successfully', required: false });
    expect(services['ollama-pull'].depends_on!.ollama.condition).toBe('service_healthy');
    // the same host folder, where Orion's WORKSPACE_ROOT is
    const mountOf = (name: string) => services[name].volumes!.find((v) => v.startsWith('./workspace:'));
    expect(mountOf('workspace-init')).toBe(mountOf('app'));
    expect(mountOf('app')!.split(':')[1]).toBe(services.app.environment!.WORKSPACE_ROOT);
  });


  it('waits only for dependencies that exist; a dependency outside the default set is optional', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, cond] of Object.entries(s.depends_on ?? {})) {
        expect([name, dep, dep in services]).toEqual([name, dep, true]);
        if (cond.condition === 'service_healthy') expect([dep, !!services[dep].healthcheck]).toEqual([dep, true]);
        const optional = inProfile(dep).length > 0 && inProfile(name).length === 0;
        if (optional) expect([name, dep, cond.required]).toEqual([name, dep, false]);
      }
    }
    expect(Object.keys(services.app.depends_on ?? {}).sort()).toEqual(['db', 'ollama', 'ollama-pull', 'searxng', 'workspace-init']);
  });

  it('mounts only files that exist in the repository, and declares every named volume', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const v of interpolateTree(s.volumes ?? [], {})) {
        const source = v.split(':')[0];
        if (source.startsWith('./')) {
          if (source !== './workspace') expect([name, source, exists(source)]).toEqual([name, source, true]);
        } else {
          expect([name, source, source in (compose.volumes ?? {})]).toEqual([name, source, true]);
        }
      }
    }
  });

  it('gives Orion only variables it reads; by default: PostgreSQL, SearXNG for web_search, the replay model', () => {
    const env = appEnv();
    for (const key of Object.keys(env)) expect([key, orionVariables.has(key) || key.startsWith('OTEL_')]).toEqual([key, true]);
    const config = validateEnv(env);
    expect(config.LLM_PROVIDER).toBe('replay');
    const db = hostOf(config.DATABASE_URL!);
    expect([db.hostname, db.username, db.password, db.pathname]).toEqual(['db', services.db.environment!.POSTGRES_USER, services.db.environment!.POSTGRES_PASSWORD, `/${services.db.environment!.POSTGRES_DB}`]);
    const searx = hostOf(config.SEARXNG_URL!);
    expect(searx.hostname).toBe('searxng');
    expect(services.searxng.healthcheck!.test.join(' ')).toContain(`:${searx.port}/`);
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('');
  });

  it('--profile ollama with deploy/ollama.env points Orion at the Ollama service and pulls that model', () => {
    const env = appEnv('deploy/ollama.env');
    const config = validateEnv(env);
    expect(config.LLM_PROVIDER).toBe('ollama');
    const url = hostOf(config.LLM_BASE_URL!);
    expect(url.hostname).toBe('ollama');
    expect(url.port).toBe('11434');
    expect(inProfile(url.hostname)).toEqual(['ollama']);
    const pull = services['ollama-pull'];
    expect(pull.environment!.OLLAMA_HOST).toBe(`http://ollama:${url.port}`);
    expect(pull.command!.map((c) => interpolate(c, readEnvFile('deploy/ollama.env')))).toEqual(['pull', config.LLM_MODEL]);
  });

  it('--profile ollama: LLM_MODEL of .env wins over deploy/ollama.env (the later --env-file), for the pull and for Orion', () => {
    const dotEnv = 'LLM_MODEL=qwen3:8b\n';
    // `--env-file .env --env-file deploy/ollama.env`: both feed interpolation, the later file winning
    const interpolation = { ...parseDotenv(dotEnv), ...readEnvFile('deploy/ollama.env') };
    const env = containerEnv(services.app, interpolation, (path) => (path === '.env' ? dotEnv : repositoryFile(path)));
    const config = validateEnv(env);
    expect([config.LLM_PROVIDER, config.LLM_MODEL]).toEqual(['ollama', 'qwen3:8b']);
    expect(services['ollama-pull'].command!.map((c) => interpolate(c, interpolation))).toEqual(['pull', 'qwen3:8b']);
    // without LLM_MODEL in .env: the profile's default, the same for both
    const bare = readEnvFile('deploy/ollama.env');
    expect(bare.LLM_MODEL).toBeUndefined();
    const byDefault = validateEnv(containerEnv(services.app, bare, (path) => (path === '.env' ? '' : repositoryFile(path))));
    expect([byDefault.LLM_MODEL, ...services['ollama-pull'].command!.map((c) => interpolate(c, bare))]).toEqual(['llama3.2', 'pull', 'llama3.2']);
    // and the default profile still passes no model: the replay model, as npm start has it
    expect(appEnv().LLM_MODEL).toBe('');
  });

  it('interpolates nested defaults as Compose does (${A:-${B:-c}})', () => {
    expect(['${A:-${B:-c}}', '${A:-${B}}', '${A-x}/$${A}', 'pre-${A:-${B:-${C:-deep}}}-post'].map((v) => interpolate(v, {}))).toEqual(['c', '', 'x/${A}', 'pre-deep-post']);
    expect(['${A:-${B:-c}}', '${A:-${B:-c}}'].map((v, i) => interpolate(v, i === 0 ? { B: 'b' } : { A: 'a', B: 'b' }))).toEqual(['b', 'a']);
    expect(() => interpolate('${A:?${B:-set A}}', {})).toThrow('set A');
  });

  it('--profile observability with deploy/observability.env sends traces to the collector over OTLP/HTTP', () => {
    const env = appEnv('deploy/observability.env');
    validateEnv(env);
    const url = hostOf(env.OTEL_EXPORTER_OTLP_ENDPOINT);
    expect(url.hostname).toBe('otel-collector');
    expect(inProfile(url.hostname)).toEqual(['observability']);
    const collector = readYaml('deploy/otel-collector/config.yaml');
    expect(collector.receivers.otlp.protocols.http.endpoint).toBe(`0.0.0.0:${url.port}`);
    expect(collector.service.pipelines.traces.receivers).toContain('otlp');
    const mount = services['otel-collector'].volumes!.find((v) => v.startsWith('./deploy/otel-collector/config.yaml:'))!;
    expect(services['otel-collector'].command).toContain(`--config=${mount.split(':')[1]}`);
  });
});

/**
 * Orion's settings under compose (issue #30): `.env` reaches Orion whole, without it Orion has the
 * defaults `npm start` has, and the compose file sets only what the stack itself decides.
 */
describe('Orion settings under docker compose', () => {
  /** What the compose file sets whatever .env says: the container's port and folders, the stack's services. */
  const STACK_OWN: Record<string, string> = {
    PORT: '3000',
    DATA_DIR: '/data',
    WORKSPACE_ROOT: '/workspace',
    DATABASE_URL: 'postgres://orion:orion@db:5432/orion',
    SEARXNG_URL: 'http://searxng:8080',
    MCP_CONFIG: '/config/mcp.json',
  };
  /** A .env that sets every variable Orion's configuration declares, each to a value of its own. */
  const sampleDotEnv = (names: Iterable<string>) => [...names].map((n) => `${n}=sample-${n.toLowerCase()}`).join('\n');
  const sampleValue = (name: string) => `sample-${name.toLowerCase()}`;
  /**
   * `docker compose up` with this .env in the project folder: Compose reads it for interpolation
   * and, through env_file, for the container.
   */
  const render = (app: Service, dotEnv: string | undefined) =>
    containerEnv(app, dotEnv === undefined ? {} : parseDotenv(dotEnv), (path) => (path === '.env' ? dotEnv : repositoryFile(path)));
  /** The variables of Orion's configuration whose value in .env does not reach Orion under this app service. */
  const dropped = (app: Service): string[] => {
    const env = render(app, sampleDotEnv(orionVariables));
    return [...orionVariables].filter((n) => !(n in STACK_OWN) && env[n] !== sampleValue(n)).sort();
  };

  it('finds every variable of the configuration (a guard on the check itself)', () => {
    expect(orionVariables.size).toBeGreaterThan(40);
    for (const n of ['LLM_MODELS', 'LLM_CONTEXT_WINDOW', 'RATE_LIMIT_PER_MINUTE', 'LOG_FORMAT', 'MCP_CONFIG', 'MAX_BODY_BYTES']) expect([n, orionVariables.has(n)]).toEqual([n, true]);
  });

  it('passes every variable of .env to Orion, except what the stack sets itself', () => {
    expect(dropped(services.app)).toEqual([]);
    const env = render(services.app, sampleDotEnv(orionVariables));
    for (const [name, value] of Object.entries(STACK_OWN)) expect([name, env[name]]).toEqual([name, value]);
  });

  it('passes on variables of .env outside the configuration too (the ${VAR} of an MCP configuration)', () => {
    expect(render(services.app, 'GITHUB_TOKEN=ghp_sample').GITHUB_TOKEN).toBe('ghp_sample');
  });

  it('fails when a variable is dropped: no env_file, or one emptied or fixed in environment', () => {
    const { env_file: _none, ...withoutEnvFile } = services.app;
    expect(dropped(withoutEnvFile)).toEqual(expect.arrayContaining(['LLM_MODELS', 'LLM_CONTEXT_WINDOW', 'RATE_LIMIT_PER_MINUTE', 'LOG_FORMAT']));
    expect(dropped({ ...services.app, environment: { ...services.app.environment, LOG_FORMAT: '' } })).toEqual(['LOG_FORMAT']);
    expect(dropped({ ...services.app, environment: { ...services.app.environment, TWO_STAGE_ENABLED: '${TWO_STAGE_ENABLED:-true}', API_KEYS: 'fixed' } })).toEqual(['API_KEYS']);
  });

  it('without .env, Orion has the defaults npm start has (TWO_STAGE_ENABLED off included), the stack\'s own settings aside', () => {
    const underCompose = validateEnv(render(services.app, undefined)) as unknown as Record<string, unknown>;
    const underNpmStart = validateEnv({}) as unknown as Record<string, unknown>;
    const differing = [...orionVariables].filter((n) => JSON.stringify(underCompose[n]) !== JSON.stringify(underNpmStart[n]));
    const stackOwn = validateEnv(STACK_OWN) as unknown as Record<string, unknown>;
    expect(differing.sort()).toEqual(Object.keys(STACK_OWN).filter((n) => JSON.stringify(underNpmStart[n]) !== JSON.stringify(stackOwn[n])).sort());
    expect(underCompose.TWO_STAGE_ENABLED).toBe(false);
  });

  it('a variable set in the shell still reaches Orion for the ones the compose file passes on (API_KEYS, LLM_*)', () => {
    const env = containerEnv(services.app, { API_KEYS: 'from-shell', LLM_MODEL: 'shell-model' }, () => undefined);
    expect([env.API_KEYS, env.LLM_MODEL]).toEqual(['from-shell', 'shell-model']);
  });

  describe('the MCP configuration', () => {
    const mount = (dotEnv: string | undefined) => {
      const volumes = interpolateTree(services.app.volumes ?? [], dotEnv === undefined ? {} : parseDotenv(dotEnv));
      const entry = volumes.find((v) => v.split(':')[1] === STACK_OWN.MCP_CONFIG);
      return entry?.split(':')[0];
    };

    it('is the host file MCP_CONFIG names in .env (the line npm start reads), mounted read-only where Orion reads it', () => {
      expect(mount('MCP_CONFIG=./mcp.json')).toBe('./mcp.json');
      expect(services.app.volumes).toContain('${MCP_CONFIG:-./deploy/mcp.json}:/config/mcp.json:ro');
      expect(render(services.app, 'MCP_CONFIG=./mcp.json').MCP_CONFIG).toBe('/config/mcp.json');
    });

    it('without MCP_CONFIG is deploy/mcp.json, a valid configuration with no server', () => {
      const source = mount(undefined)!;
      expect(source).toBe('./deploy/mcp.json');
      expect(loadMcpConfig(resolveMcpConfigSource(source, ROOT))).toEqual([]);
    });
  });
});

/** Every compose file in the repository: at its root and anywhere under deploy/. */
function composeFiles(): string[] {
  const isCompose = (name: string) => /^(docker-)?compose([.-][\w.-]+)?\.ya?ml$/.test(name);
  const root = readdirSync(ROOT).filter(isCompose);
  const deploy = (readdirSync(join(ROOT, 'deploy'), { recursive: true }) as string[]).filter((p) => isCompose(p.split('/').pop()!)).map((p) => `deploy/${p}`);
  return [...root, ...deploy];
}

/** The variables Compose interpolates with for each documented command (a password as an operator sets it). */
const DOCUMENTED_ENVS: Record<string, Record<string, string>> = {
  default: {},
  ollama: readEnvFile('deploy/ollama.env'),
  observability: { ...readEnvFile('deploy/observability.env'), GRAFANA_ADMIN_PASSWORD: 'an-operator-secret' },
};

describe('compose files against the Compose Specification schema', () => {
  it('finds docker-compose.yml among the compose files', () => {
    expect(composeFiles()).toContain('docker-compose.yml');
  });

  it.each(composeFiles().flatMap((file) => Object.keys(DOCUMENTED_ENVS).map((env) => [file, env])))('%s, interpolated as the %s command does, is valid', (file, env) => {
    expect(composeErrors(interpolateTree(readYaml(file), DOCUMENTED_ENVS[env]))).toEqual([]);
  });

  // The cases below prove the validation can fail: each is docker-compose.yml with one mistake.
  const withMistake = (mistake: (doc: any) => void) => {
    const doc = interpolateTree(readYaml('docker-compose.yml'), {});
    mistake(doc);
    return composeErrors(doc);
  };

  it('rejects an unknown key in a service (a misspelt healthcheck)', () => {
    const errors = withMistake((doc) => {
      doc.services.db.helthcheck = doc.services.db.healthcheck;
      delete doc.services.db.healthcheck;
    });
    expect(errors).toContain('/services/db must NOT have additional properties');
  });

  it('rejects an unknown top-level key and a wrongly typed value', () => {
    expect(withMistake((doc) => (doc.service = doc.services))).toContain('/ must NOT have additional properties');
    expect(withMistake((doc) => (doc.services.app.restart = 1))).toContain('/services/app/restart must be string');
  });

  it('rejects a dependency condition Compose does not know', () => {
    const errors = withMistake((doc) => (doc.services.app.depends_on.db.condition = 'healthy'));
    expect(errors.some((e) => e.startsWith('/services/app/depends_on/db/condition must be equal to one of the allowed values'))).toBe(true);
  });
});

describe('exposure of the compose stack', () => {
  const published = (name: string) => (interpolateTree(services[name], {}).ports ?? []).map((p) => String(p));

  it('publishes Orion on every interface and every auxiliary service on 127.0.0.1 only', () => {
    expect(published('app')).toEqual(['3000:3000']);
    const auxiliary = Object.keys(services).filter((s) => s !== 'app');
    const bound = auxiliary.flatMap((name) => published(name).map((p) => [name, p.split(':')[0]]));
    expect(bound.length).toBeGreaterThan(0);
    for (const [name, host] of bound) expect([name, host]).toEqual([name, '127.0.0.1']);
  });

  describe('Grafana without an admin password of its own', () => {
    const grafana = services.grafana;
    // the entrypoint as the container runs it, with Grafana's own start script replaced by an echo
    const [shell, flag, script, ...args] = grafana.entrypoint!.map((a) => interpolate(a, {}));
    const start = (password: string | undefined) => {
      const env = interpolateTree(grafana.environment!, password === undefined ? {} : { GRAFANA_ADMIN_PASSWORD: password });
      return spawnSync(shell, [flag, script.replace('exec /run.sh', 'exec echo grafana-started'), ...args], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
    };

    it('refuses to start when GRAFANA_ADMIN_PASSWORD is unset, empty or admin, and says which variable to set', () => {
      for (const password of [undefined, '', 'admin']) {
        const run = start(password);
        expect([password, run.status, run.stdout]).toEqual([password, 1, '']);
        expect(run.stderr).toContain('set GRAFANA_ADMIN_PASSWORD');
      }
    });

    it('starts Grafana with the password that is set', () => {
      const run = start('s3cret pass');
      expect([run.status, run.stdout.trim(), run.stderr]).toEqual([0, 'grafana-started', '']);
      expect(interpolateTree(grafana.environment!, { GRAFANA_ADMIN_PASSWORD: 's3cret pass' }).GF_SECURITY_ADMIN_PASSWORD).toBe('s3cret pass');
    });
  });
});

describe('documented compose commands', () => {
  // Compose reads .env only when no --env-file is given, so a command with a profile's env file
  // must name .env first or it silently drops API_KEYS, LLM_* and GRAFANA_ADMIN_PASSWORD.
  const documents = ['README.md', 'docker-compose.yml', 'deploy/ollama.env', 'deploy/observability.env'];
  const commands = documents.flatMap((doc) =>
    readFileSync(join(ROOT, doc), 'utf8')
      .split('\n')
      .filter((line) => /--env-file\s+deploy\//.test(line))
      .map((line) => [doc, line.trim()]),
  );

  it('are found in the README, the compose file and the env files', () => {
    expect(new Set(commands.map(([doc]) => doc))).toEqual(new Set(documents));
  });

  it.each(commands)('%s: `%s` passes --env-file .env before the profile env file', (_doc, line) => {
    expect(line).toMatch(/--env-file\s+\.env\s+--env-file\s+deploy\//);
  });
});

describe('deploy/ configs', () => {
  it('SearXNG answers its JSON API (what web_search calls) without a rate limiter', () => {
    const settings = readYaml('deploy/searxng/settings.yml');
    expect(settings.search.formats).toContain('json');
    expect(settings.server.limiter).toBe(false);
    expect(services.searxng.volumes).toContain('./deploy/searxng/settings.yml:/etc/searxng/settings.yml:ro');
  });

  it("Prometheus scrapes Orion's /metrics on the compose network", () => {
    const prom = readYaml('deploy/prometheus/prometheus.yml');
    const job = prom.scrape_configs.find((j: { job_name: string }) => j.job_name === 'orion');
    expect(job.metrics_path).toBe('/metrics');
    expect(job.static_configs[0].targets).toEqual(['app:3000']);
    expect(services.app.ports![0]).toMatch(/:3000$/);
  });

  describe('Prometheus with API_KEYS in .env (/metrics needs a key then)', () => {
    const prometheus = services.prometheus;
    const job = readYaml('deploy/prometheus/prometheus.yml').scrape_configs.find((j: { job_name: string }) => j.job_name === 'orion');
    const keyFile = job.authorization?.credentials_file as string;
    /** The entrypoint as the container runs it: the key file in a temporary folder, Prometheus replaced by an echo of its flags. */
    const start = (dotenv: Record<string, string>) => {
      const dir = mkdtempSync(join(tmpdir(), 'orion-prom-'));
      const [shell, flag, script, ...args] = prometheus.entrypoint!.map((a) => interpolate(a, {}));
      const env = interpolateTree(prometheus.environment!, dotenv);
      const run = spawnSync(shell, [flag, script.replaceAll(keyFile, join(dir, 'key')).replace('exec /bin/prometheus', 'exec echo'), ...args], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
      const key = readFileSync(join(dir, 'key'), 'utf8');
      rmSync(dir, { recursive: true, force: true });
      return { run, key };
    };

    it('sends a bearer token read from the file the entrypoint writes, in the volume Prometheus can write to', () => {
      expect(job.authorization.type).toBe('Bearer');
      expect(keyFile.startsWith('/prometheus/')).toBe(true);
      expect(prometheus.volumes).toContain('prometheus:/prometheus');
    });

    it('the token is ORION_METRICS_KEY, else the first key of API_KEYS (an admin key of Orion, which /metrics takes), else empty', () => {
      expect(start({ API_KEYS: 'first-key,second-key' }).key).toBe('first-key');
      expect(start({ API_KEYS: 'first-key', ORION_METRICS_KEY: 'metrics-only' }).key).toBe('metrics-only');
      expect(start({}).key).toBe('');
    });

    it('still starts Prometheus with its configuration and storage', () => {
      const { run } = start({ API_KEYS: 'k' });
      expect([run.status, run.stderr]).toEqual([0, '']);
      const config = prometheus.volumes!.find((v) => v.startsWith('./deploy/prometheus/prometheus.yml:'))!.split(':')[1];
      expect(run.stdout.trim()).toBe(`--config.file=${config} --storage.tsdb.path=/prometheus`);
    });
  });

  it('Grafana is provisioned with that Prometheus and the checked-in dashboard, which charts Orion metrics only', () => {
    const sources = readYaml('deploy/grafana/provisioning/datasources/prometheus.yml').datasources;
    expect(sources).toHaveLength(1);
    expect(hostOf(sources[0].url).host).toBe('prometheus:9090');
    const provider = readYaml('deploy/grafana/provisioning/dashboards/orion.yml').providers[0];
    expect(services.grafana.volumes).toContain(`./deploy/grafana/dashboards:${provider.options.path}:ro`);
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards/orion-overview.json'), 'utf8'));
    const targets = dashboard.panels.flatMap((p: { targets: Array<{ expr: string; datasource: { uid: string } }> }) => p.targets);
    expect(targets.length).toBeGreaterThanOrEqual(ORION_METRICS.length);
    for (const t of targets) expect(t.datasource.uid).toBe(sources[0].uid);
    const used = new Set(targets.flatMap((t: { expr: string }) => (t.expr.match(/\borion_[a-z_]+/g) ?? []).map((m) => m.replace(/_(bucket|sum|count)$/, ''))));
    expect([...used].sort()).toEqual([...ORION_METRICS].sort());
  });
});

describe('Dockerfile', () => {
  const steps = readDockerfile();
  const final = Math.max(...steps.map((s) => s.stage));
  const inFinal = (kw: string) => steps.filter((s) => s.stage === final && s.keyword === kw);

  it('builds and runs on one maintained Node LTS that package.json "engines" accepts', () => {
    const bases = steps.filter((s) => s.keyword === 'FROM').map((s) => s.args.split(/\s+/)[0]);
    expect(new Set(bases).size).toBe(1);
    const major = Number(/^node:(\d+)-/.exec(bases[0])?.[1]);
    expect([22, 24]).toContain(major); // Node 20 reached end of life in April 2026
    const engines: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node;
    const accepts = engines.split('||').some((range) => {
      const m = /^\s*(\^|>=)(\d+)\./.exec(range);
      return !!m && (m[1] === '^' ? Number(m[2]) === major : major >= Number(m[2]));
    });
    expect(accepts).toBe(true);
  });

  it('runs as the unprivileged node user, checks /api/health/ready and starts dist/main.js', () => {
    expect(inFinal('USER').map((s) => s.args)).toEqual(['node']);
    const [health] = inFinal('HEALTHCHECK');
    expect(health.args).toMatch(/CMD \[/); // exec form: no shell needed in the image
    // the check is a script the final stage copies in; it asks /api/health/ready
    expect(JSON.parse(health.args.replace(/^.*?CMD\s+/, ''))).toEqual(['node', 'scripts/container-health.mjs']);
    expect(inFinal('COPY').map((c) => c.args)).toContain('scripts/container-health.mjs ./scripts/');
    const check = readFileSync(join(ROOT, 'scripts', 'container-health.mjs'), 'utf8');
    expect(check).toMatch(/http:\/\/127\.0\.0\.1:\$\{port\}\/api\/health\/ready/);
    expect(check).toContain("const port = process.env.PORT || '3000';");
    expect(JSON.parse(inFinal('CMD')[0].args)).toEqual(['node', 'dist/main.js']);
    const port = /PORT=(\d+)/.exec(inFinal('ENV').map((s) => s.args).join(' '))?.[1];
    expect(inFinal('EXPOSE').map((s) => s.args)).toEqual([port]);
  });

  it("npm ci can run each workspace's prepare script (the typed client builds itself): its sources are copied before it", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
    const ci = steps.findIndex((st) => st.keyword === 'RUN' && /\bnpm ci\b/.test(st.args));
    const copiedBefore = steps.slice(0, ci).filter((st) => st.keyword === 'COPY').flatMap((st) => st.args.split(/\s+/).slice(0, -1));
    for (const ws of pkg.workspaces) {
      const manifest = JSON.parse(readFileSync(join(ROOT, ws, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
      expect(copiedBefore).toContain(`${ws}/package.json`);
      if (!manifest.scripts?.prepare) continue;
      // what its build reads: its tsconfig and its sources
      expect(manifest.scripts.build).toBe('tsc -p tsconfig.json');
      expect([ws, copiedBefore]).toEqual([ws, expect.arrayContaining([`${ws}/tsconfig.json`, `${ws}/src`])]);
    }
  });

  it('copies only files that exist and that .dockerignore lets into the context, which leaves out node_modules, dist, data and .git', () => {
    const ignored = dockerignore();
    for (const dir of ['node_modules', 'dist', 'data', 'workspace', '.git', 'node_modules/x']) expect([dir, ignored(dir)]).toEqual([dir, true]);
    const copies = steps.filter((s) => s.keyword === 'COPY' && !s.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) {
      const sources = c.args.split(/\s+/).slice(0, -1);
      for (const src of sources) expect([src, exists(src), ignored(src)]).toEqual([src, true, false]);
    }
  });
});
