import { validateEnv } from './env.schema';

describe('validateEnv', () => {
  it('applies the documented defaults', () => {
    const env = validateEnv({});
    expect(env).toMatchObject({ PORT: 3000, DATA_DIR: './data', LLM_PROVIDER: 'replay', LLM_TIMEOUT_MS: 120000, TWO_STAGE_ENABLED: false, ORCHESTRATOR_ENABLED: true, MAX_PHASE_CYCLES_PER_TURN: 3, MAX_DUPLICATE_ATTEMPTS: 3, MAX_ITERATIONS: 10, WORKSPACE_ROOT: './workspace' });
  });

  it('picks openai when LLM_BASE_URL is set, and then needs LLM_MODEL', () => {
    expect(() => validateEnv({ LLM_BASE_URL: 'http://x/v1' })).toThrow(/LLM_MODEL=.*required when LLM_PROVIDER is openai or ollama/);
    expect(validateEnv({ LLM_BASE_URL: 'http://x/v1', LLM_MODEL: 'm' }).LLM_PROVIDER).toBe('openai');
  });

  it('LLM_MODELS: its first entry is the default, LLM_MODEL must be one of them, names are unique', () => {
    expect(validateEnv({ LLM_BASE_URL: 'http://x/v1', LLM_MODELS: ' a , b ' }).LLM_MODEL).toBe('a');
    expect(validateEnv({ LLM_BASE_URL: 'http://x/v1', LLM_MODELS: 'a,b', LLM_MODEL: 'b' }).LLM_MODEL).toBe('b');
    expect(() => validateEnv({ LLM_BASE_URL: 'http://x/v1', LLM_MODELS: 'a,b', LLM_MODEL: 'c' })).toThrow(/LLM_MODEL="c": must be one of LLM_MODELS \(a, b\)/);
    expect(() => validateEnv({ LLM_MODELS: 'a,,b' })).toThrow(/LLM_MODELS="a,,b": must be a comma-separated list/);
    expect(() => validateEnv({ LLM_MODELS: 'a,b,a' })).toThrow(/LLM_MODELS="a,b,a": names a model twice/);
    expect(validateEnv({ LLM_BASE_URL: 'http://x/v1', LLM_MODEL: 'm' }).LLM_MODELS).toBeUndefined();
  });

  it('treats empty values as unset (docker compose passes them)', () => {
    expect(validateEnv({ PORT: '', LLM_PROVIDER: '', DATABASE_URL: '', SEARXNG_URL: '' })).toMatchObject({ PORT: 3000, LLM_PROVIDER: 'replay' });
  });

  it('lists every bad value with NAME=value and what is allowed, and never shows a key', () => {
    let message = '';
    try {
      validateEnv({ PORT: 'abc', LLM_PROVIDER: 'bogus', TWO_STAGE_ENABLED: 'maybe', MAX_ITERATIONS: '0', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', API_KEYS: ',', DATABASE_PREPARED_STATEMENTS: 'sometimes' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('PORT="abc": PORT must be an integer number');
    expect(message).toMatch(/LLM_PROVIDER="bogus":.*allowed: openai \| ollama \| replay/);
    expect(message).toMatch(/TWO_STAGE_ENABLED="maybe":.*allowed: true \| false/);
    expect(message).toMatch(/DATABASE_PREPARED_STATEMENTS="sometimes":.*allowed: true \| false/);
    expect(message).toMatch(/MAX_ITERATIONS="0": MAX_ITERATIONS must not be less than 1/);
    expect(message).toMatch(/DATABASE_URL="mysql:\/\/x": must be a postgres/);
    expect(message).toMatch(/LOG_LEVEL="loud"/);
    expect(message).toMatch(/API_KEYS=<redacted>/);
  });

  it('tool-only orchestration: defaults, and each bad value stops start-up with its name, value and range', () => {
    expect(validateEnv({})).toMatchObject({ ORCHESTRATION_MAX_CALLS: 1, ORCHESTRATION_TOP_K: 5, ORCHESTRATION_MIN_SCORE: 0.23 });
    expect(validateEnv({}).ORCHESTRATION_DEFAULT_MODE).toBeUndefined();
    expect(validateEnv({ ORCHESTRATION_DEFAULT_MODE: 'NarrowTopK', ORCHESTRATION_MAX_CALLS: '3', ORCHESTRATION_TOP_K: '12', ORCHESTRATION_MIN_SCORE: '.5' })).toMatchObject({
      ORCHESTRATION_DEFAULT_MODE: 'NarrowTopK',
      ORCHESTRATION_MAX_CALLS: 3,
      ORCHESTRATION_TOP_K: 12,
      ORCHESTRATION_MIN_SCORE: 0.5,
    });
    expect(validateEnv({ ORCHESTRATION_MIN_SCORE: '0', ORCHESTRATION_DEFAULT_MODE: '' })).toMatchObject({ ORCHESTRATION_MIN_SCORE: 0, ORCHESTRATION_DEFAULT_MODE: undefined });
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ ORCHESTRATION_DEFAULT_MODE: 'classic' }, /ORCHESTRATION_DEFAULT_MODE="classic":.*allowed: Classic \| NarrowTopK/],
      [{ ORCHESTRATION_DEFAULT_MODE: 'Hybrid' }, /ORCHESTRATION_DEFAULT_MODE="Hybrid":.*allowed: Classic \| NarrowTopK/],
      [{ ORCHESTRATION_MAX_CALLS: '0' }, /ORCHESTRATION_MAX_CALLS="0": ORCHESTRATION_MAX_CALLS must not be less than 1 \(allowed: 1\.\.20\)/],
      [{ ORCHESTRATION_MAX_CALLS: '21' }, /ORCHESTRATION_MAX_CALLS="21": ORCHESTRATION_MAX_CALLS must not be greater than 20/],
      [{ ORCHESTRATION_MAX_CALLS: '2.5' }, /ORCHESTRATION_MAX_CALLS="2.5": ORCHESTRATION_MAX_CALLS must be an integer number/],
      [{ ORCHESTRATION_TOP_K: '51' }, /ORCHESTRATION_TOP_K="51": ORCHESTRATION_TOP_K must not be greater than 50 \(allowed: 1\.\.50\)/],
      [{ ORCHESTRATION_TOP_K: 'five' }, /ORCHESTRATION_TOP_K="five": ORCHESTRATION_TOP_K must be an integer number/],
      [{ ORCHESTRATION_MIN_SCORE: '1.5' }, /ORCHESTRATION_MIN_SCORE="1.5": ORCHESTRATION_MIN_SCORE must not be greater than 1 \(allowed: a number from 0 to 1\)/],
      [{ ORCHESTRATION_MIN_SCORE: '-0.1' }, /ORCHESTRATION_MIN_SCORE="-0.1": ORCHESTRATION_MIN_SCORE must not be less than 0/],
      [{ ORCHESTRATION_MIN_SCORE: 'high' }, /ORCHESTRATION_MIN_SCORE="high": ORCHESTRATION_MIN_SCORE must be a number/],
      [{ ORCHESTRATION_MIN_SCORE: '0.3abc' }, /ORCHESTRATION_MIN_SCORE="0.3abc": ORCHESTRATION_MIN_SCORE must be a number/],
    ];
    for (const [env, message] of bad) expect(() => validateEnv(env)).toThrow(message);
  });

  it('accepts booleans written as 1/0, yes/no, on/off', () => {
    expect(validateEnv({ TWO_STAGE_ENABLED: 'yes', ORCHESTRATOR_ENABLED: '0' })).toMatchObject({ TWO_STAGE_ENABLED: true, ORCHESTRATOR_ENABLED: false });
  });

  it('storage (issue 43): compaction on by default after 10m, retention unset, durations validated', () => {
    const env = validateEnv({});
    expect(env).toMatchObject({ RUN_COMPACT_AFTER: '10m', STORAGE_MAINTENANCE_MS: 60_000, STORAGE_BATCH_SIZE: 200, STORAGE_VACUUM_EVERY: '10m' });
    expect(validateEnv({ STORAGE_VACUUM_EVERY: 'off' })).toMatchObject({ STORAGE_VACUUM_EVERY: 'off' });
    expect(() => validateEnv({ STORAGE_VACUUM_EVERY: 'often' })).toThrow(/STORAGE_VACUUM_EVERY="often"/);
    expect(env.RETENTION_RUNS).toBeUndefined();
    expect(validateEnv({ RUN_COMPACT_AFTER: 'off', RETENTION_RUNS: '90s', RETENTION_TRACE: '12h', RETENTION_CONVERSATIONS: '30d' })).toMatchObject({ RUN_COMPACT_AFTER: 'off', RETENTION_RUNS: '90s', RETENTION_TRACE: '12h', RETENTION_CONVERSATIONS: '30d' });
    expect(() => validateEnv({ RETENTION_RUNS: '90', RETENTION_TRACE: '1h30m', RUN_COMPACT_AFTER: 'soon' })).toThrow(
      /RUN_COMPACT_AFTER="soon"[\s\S]*RETENTION_RUNS="90": RETENTION_RUNS must be a whole number and a unit[\s\S]*RETENTION_TRACE="1h30m"/,
    );
  });

  it('PARTITION_INTERVAL (issue 43): a day by default; a span from 10s to 1d that divides a day', () => {
    expect(validateEnv({})).toMatchObject({ PARTITION_INTERVAL: '1d' });
    for (const ok of ['10s', '30s', '1m', '15m', '1h', '6h', '1d']) expect(validateEnv({ PARTITION_INTERVAL: ok })).toMatchObject({ PARTITION_INTERVAL: ok });
    for (const bad of ['5s', '7m', '2d', '1w', 'off', 'daily']) expect(() => validateEnv({ PARTITION_INTERVAL: bad })).toThrow(/PARTITION_INTERVAL must be a duration from 10s to 1d that divides a day/);
  });
});
