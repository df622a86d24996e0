import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateIf,
  ValidationError,
  validateSync,
  registerDecorator,
} from 'class-validator';
import { parseExtraBody } from './extra-body';
import { isDurationOrOff, partitionSpanMs } from './duration';

const toBool = ({ value }: { value: unknown }) => {
  if (typeof value === 'boolean') return value;
  if (value === undefined || value === '') return undefined;
  const v = String(value).trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return value; // left as a string so @IsBoolean reports it with its value
};
const toInt = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'number') return value;
  return /^-?\d+$/.test(String(value).trim()) ? Number(String(value).trim()) : value;
};
const toNumber = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'number') return value;
  const v = String(value).trim();
  // a decimal number only ("0.25", ".5", "1"); anything else stays a string so @IsNumber reports it
  return /^-?(\d+\.?\d*|\.\d+)$/.test(v) ? Number(v) : value;
};
const emptyToUndefined = ({ value }: { value: unknown }) =>
  value === '' || value === undefined ? undefined : value;

export const LLM_PROVIDERS = ['openai', 'ollama', 'replay'] as const;

/** What a message does when its conversation's previous turn is still active (issue 33). */
export const MULTITASK_STRATEGIES = ['reject', 'enqueue', 'interrupt', 'rollback'] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];

/** The tool-only modes (`/api/orchestration/execute`); orchestration's TOOL_MODES is this list. */
export const ORCHESTRATION_MODES = ['Classic', 'NarrowTopK'] as const;
export type OrchestrationMode = (typeof ORCHESTRATION_MODES)[number];
export type LlmProviderName = (typeof LLM_PROVIDERS)[number];

/**
 * Every environment variable Orion reads (docs/API.md "Configuration"). Defaults are property initializers; `validateEnv`
 * stops start-up with `NAME=value` and the allowed values when anything is off.
 */
/** Families whose reasoning switch Orion knows (src/llm/adapters/thinking-switch.ts). */
export const THINKING_SWITCHES = ['auto', 'qwen', 'deepseek', 'openai', 'none'] as const;
export type ThinkingSwitch = (typeof THINKING_SWITCHES)[number];

/** A string that parses as a JSON object (not an array, not null). */
function IsJsonObject(): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name: 'isJsonObject',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (v: unknown) => typeof v === 'string' && parseExtraBody(v) !== undefined,
        defaultMessage: () => `${String(key)} must be a JSON object, e.g. {"top_k": 20}`,
      },
    });
}

/** A duration (`90s`, `12h`, `30d`) or an off word (`0`, `off`, `forever`, `never`): src/config/duration.ts. */
function IsDurationOrOff(): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name: 'isDurationOrOff',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (v: unknown) => v === undefined || isDurationOrOff(v),
        defaultMessage: () => `${String(key)} must be a whole number and a unit (ms, s, m, h, d, w), e.g. 90s, 12h or 30d, at most 10 years; or off`,
      },
    });
}

/** A partition span: a duration from 10s to 1d that divides a day (src/config/duration.ts, partitionSpanMs). */
function IsPartitionSpan(): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name: 'isPartitionSpan',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (v: unknown) => typeof v === 'string' && partitionSpanMs(v) !== undefined,
        defaultMessage: () => `${String(key)} must be a duration from 10s to 1d that divides a day evenly, e.g. 30s, 1m, 15m, 1h or 1d`,
      },
    });
}

export class EnvironmentVariables {
  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 3000;

  /** `postgres://…` for PostgreSQL; unset: embedded PGlite in DATA_DIR; `memory://`: in-memory PGlite. */
  @Transform(emptyToUndefined) @IsOptional() @Matches(/^(postgres(ql)?:\/\/.+|memory:\/\/)$/, {
    message: 'must be a postgres:// (or postgresql://) URL or memory://',
  })
  DATABASE_URL?: string;

  /**
   * The statements every turn sends several times go as named prepared statements, parsed and
   * planned once per connection. `false` sends them unnamed: for a proxy in front of PostgreSQL
   * that does not support named prepared statements.
   */
  @Transform(toBool) @IsBoolean()
  DATABASE_PREPARED_STATEMENTS = true;

  @IsString()
  DATA_DIR = './data';

  /**
   * Embedded PGlite: `small` (default) idles small — 16 MB of shared buffers and WebAssembly run
   * by V8's baseline compiler only, about 10 % more CPU on database work; `fast` keeps PGlite's
   * own settings (optimized WebAssembly code, more memory). See README "Database".
   */
  @IsIn(['small', 'fast'])
  PGLITE_PROFILE: 'small' | 'fast' = 'small';

  /** Defaults to `openai` when LLM_BASE_URL is set, else `replay` (resolved in validateEnv). */
  @Transform(emptyToUndefined) @IsOptional() @IsIn(LLM_PROVIDERS as unknown as string[])
  LLM_PROVIDER?: LlmProviderName;

  @Transform(emptyToUndefined)
  @ValidateIf((e: EnvironmentVariables) => e.LLM_PROVIDER === 'openai' || e.LLM_PROVIDER === 'ollama')
  @Matches(/^https?:\/\/.+/, { message: 'must be an http(s) URL (required when LLM_PROVIDER is openai or ollama)' })
  LLM_BASE_URL?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  LLM_API_KEY?: string;

  @Transform(emptyToUndefined)
  @ValidateIf((e: EnvironmentVariables) => e.LLM_PROVIDER === 'openai' || e.LLM_PROVIDER === 'ollama')
  @IsString({ message: 'is required when LLM_PROVIDER is openai or ollama (or set LLM_MODELS)' })
  LLM_MODEL?: string;

  /**
   * Extension: the models a conversation or a message may pick (comma-separated, first is the
   * default). Unset: LLM_MODEL is the only model. validateEnv fills LLM_MODEL from it.
   */
  @Transform(emptyToUndefined) @IsOptional() @Matches(/^\s*[^,\s]+(\s*,\s*[^,\s]+)*\s*$/, {
    message: 'must be a comma-separated list of model names, e.g. qwen3:8b,llama3.1:8b',
  })
  LLM_MODELS?: string;

  @Transform(toInt) @IsInt() @Min(1000) @Max(3_600_000)
  LLM_TIMEOUT_MS = 120_000;

  /** Extension: longest silence allowed between two streamed chunks. */
  @Transform(toInt) @IsInt() @Min(100) @Max(3_600_000)
  LLM_IDLE_TIMEOUT_MS = 60_000;

  /** Extension: longest line (characters) a model stream may send; an SSE message's buffered data counts too. */
  @Transform(toInt) @IsInt() @Min(1024) @Max(268_435_456)
  LLM_MAX_LINE_LENGTH = 8_388_608;

  /** Extension: whether an OpenAI-compatible endpoint can call tools (Ollama is asked via /api/show). */
  @Transform(toBool) @IsBoolean()
  LLM_TOOL_CALLING = true;

  /**
   * Extension: `off` (default) asks for no reasoning on the model calls that decide tools, with
   * the switch of the server's family (LLM_THINKING_SWITCH); `on` never does.
   */
  @IsIn(['off', 'on'])
  LLM_THINKING: 'off' | 'on' = 'off';

  /** Extension: which family's reasoning switch an OpenAI-compatible server reads; `auto` goes by the model's name. */
  @IsIn(THINKING_SWITCHES as unknown as string[])
  LLM_THINKING_SWITCH: ThinkingSwitch = 'auto';

  /** Extension: a JSON object merged into every model request body (server-specific fields). */
  @Transform(emptyToUndefined) @IsOptional() @IsJsonObject()
  LLM_EXTRA_BODY?: string;

  /** Prices per model (inline JSON or a JSON file's path; src/llm/llm-prices.ts, docs/OPERATIONS.md "Prices"). */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  LLM_PRICES?: string;

  /** Extension: the model's context window in tokens, used by the context budget. */
  @Transform(toInt) @IsInt() @Min(1024) @Max(10_000_000)
  LLM_CONTEXT_WINDOW = 32_768;

  /** Embedding model for vector search (knowledge base, tool index); unset: full-text/BM25 only. */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  LLM_EMBEDDING_MODEL?: string;

  @Transform(toBool) @IsBoolean()
  TWO_STAGE_ENABLED = false;

  @Transform(toBool) @IsBoolean()
  ORCHESTRATOR_ENABLED = true;

  @Transform(toInt) @IsInt() @Min(1) @Max(20)
  MAX_PHASE_CYCLES_PER_TURN = 3;

  @Transform(toInt) @IsInt() @Min(1) @Max(20)
  MAX_DUPLICATE_ATTEMPTS = 3;

  @Transform(toInt) @IsInt() @Min(1) @Max(20)
  MAX_ITERATIONS = 10;

  /** Tokens one turn may use before its forced final answer (docs/API.md, Loops); 0: no turn budget. */
  @Transform(toInt) @IsInt() @Min(0) @Max(10_000_000)
  TURN_TOKEN_BUDGET = 0;

  /**
   * What a turn under a project or key budget reserves when TURN_TOKEN_BUDGET (or the request's
   * turnTokenBudget) sets none, and then runs with as its turn budget (docs/OPERATIONS.md, "Budgets").
   */
  @Transform(toInt) @IsInt() @Min(256) @Max(10_000_000)
  BUDGET_TURN_RESERVE_TOKENS = 16_000;

  /**
   * Content loops (docs/API.md, Loops): how many back-to-back copies of one passage stop a
   * response in prose (twice as many inside code blocks and tables); 0 turns the detector off.
   * The default comes from the loop corpus (bench:loops).
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(50)
  LOOP_CONTENT_REPEATS = 8;

  @IsString()
  WORKSPACE_ROOT = './workspace';

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  MCP_CONFIG?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^https?:\/\/.+/, { message: 'must be an http(s) URL' })
  SEARXNG_URL?: string;

  /** Comma-separated bearer keys; when set every /api/* route but /api/health needs one. */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  API_KEYS?: string;

  /** Extension: comma-separated hosts (or host:port) fetch_page may reach even when they resolve to private addresses. */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  FETCH_ALLOW_HOSTS?: string;

  /**
   * Extension: largest request body in bytes (a 413 names this setting past it). The default holds
   * 32,000 characters of content at up to 4 bytes each, plus the rest of the body.
   */
  @Transform(toInt) @IsInt() @Min(1024) @Max(67_108_864)
  MAX_BODY_BYTES = 262_144;

  /** Extension: default per-tool timeout. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  TOOL_TIMEOUT_MS = 30_000;

  /** Extension: largest tool result (bytes of its JSON) handed to the model and the trace. */
  @Transform(toInt) @IsInt() @Min(1024) @Max(10_000_000)
  TOOL_RESULT_MAX_BYTES = 65_536;

  /** Extension: comma-separated tool names; when set only these tools are registered. */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  TOOLS_ALLOW?: string;

  /** Extension: comma-separated tool names never registered. */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  TOOLS_DENY?: string;

  /** Extension: comma-separated tool names whose repeated identical calls run again (repeat policy `rerun`). */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  TOOLS_RERUN?: string;

  /**
   * Extension: comma-separated tool names or globs (`fs__write*`) whose calls wait for a person's
   * approval (docs/API.md, Approvals).
   */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  TOOLS_REQUIRE_APPROVAL?: string;

  /**
   * Extension: which MCP tools wait for approval when TOOLS_REQUIRE_APPROVAL does not name them:
   * `destructive` (annotated `destructiveHint: true`, or lacking `readOnlyHint: true`), `all`, `none`.
   */
  @IsIn(['destructive', 'all', 'none'])
  TOOLS_APPROVAL_DEFAULT: 'destructive' | 'all' | 'none' = 'destructive';

  /** Extension: how long a call waits for a person before it counts as denied (reason `timeout`). */
  @Transform(toInt) @IsInt() @Min(1000) @Max(86_400_000)
  APPROVAL_TIMEOUT_MS = 600_000;

  /** Extension: how long a running instance's lease on a run lasts before another may close it. */
  @Transform(toInt) @IsInt() @Min(1000) @Max(3_600_000)
  RUN_LEASE_MS = 30_000;

  /**
   * Extension (issue 44): on SIGTERM, how long the turns running here may take to finish before
   * the rest are handed over to another instance at their next checkpoint (rolling deploys).
   * Keep it, plus RunDrainService.HANDOVER_WAIT_MS and a lease, under the orchestrator's kill timeout.
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(600_000)
  SHUTDOWN_GRACE_MS = 10_000;

  /**
   * Extension (issue 44): how many times a run whose instance died is taken over and continued
   * from its last checkpoint by another instance; past it, the run is closed `instance_lost`.
   * `0`: never continued (closed as before).
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(100)
  RUN_MAX_TAKEOVERS = 2;

  /**
   * Extension (issue 42): how long an `Idempotency-Key` names the request its first send started
   * (docs/API.md, Idempotent sends): within it, the same key with the same body gives that run.
   */
  @Transform(toInt) @IsInt() @Min(1000) @Max(604_800_000)
  IDEMPOTENCY_WINDOW_MS = 86_400_000;

  /**
   * Extension (issue 43): how long after a run ended (its reconnect window) its chunk events are
   * folded into one per phase (docs/API.md, Storage). `0` or `off`: never.
   */
  @Transform(emptyToUndefined) @IsDurationOrOff()
  RUN_COMPACT_AFTER = '10m';

  /** Extension (issue 43): ended runs not written to for this long are deleted with their events, approvals and webhook rows; unset: kept for ever. */
  @Transform(emptyToUndefined) @IsOptional() @IsDurationOrOff()
  RETENTION_RUNS?: string;

  /** Extension (issue 43): trace records older than this are deleted (never a live or paused run's); unset: kept for ever. */
  @Transform(emptyToUndefined) @IsOptional() @IsDurationOrOff()
  RETENTION_TRACE?: string;

  /** Extension (issue 43): conversations not written to for this long are deleted with their messages and runs; unset: kept for ever. */
  @Transform(emptyToUndefined) @IsOptional() @IsDurationOrOff()
  RETENTION_CONVERSATIONS?: string;

  /**
   * Extension (issue 43): the time each partition of run_events and trace_events covers on
   * PostgreSQL and PGlite (docs/OPERATIONS.md, Partitions): about a tenth of the shortest
   * retention, so that retention drops whole partitions; new partitions get this span.
   */
  @IsPartitionSpan()
  PARTITION_INTERVAL = '1d';

  /** Extension (issue 43): how often the storage worker (compaction, retention) runs a pass. */
  @Transform(toInt) @IsInt() @Min(50) @Max(86_400_000)
  STORAGE_MAINTENANCE_MS = 60_000;

  /**
   * Extension (issue 43): after a pass that deleted rows, the storage worker VACUUMs the tables it
   * deleted from, at most once per this time, so their free space is reused at the rate retention
   * frees it (PGlite has no autovacuum; on PostgreSQL autovacuum's own schedule lags a short
   * retention). `0` or `off`: never (autovacuum alone). docs/OPERATIONS.md, Storage.
   */
  @Transform(emptyToUndefined) @IsDurationOrOff()
  STORAGE_VACUUM_EVERY = '10m';

  /** Extension (issue 43): rows (runs, conversations, trace records) one batch of the storage worker touches; a pass runs batches until none is left. */
  @Transform(toInt) @IsInt() @Min(1) @Max(10_000)
  STORAGE_BATCH_SIZE = 200;

  /** Extension (issue 33): webhooks may be sent to private and loopback addresses (a receiver on the same network). */
  @Transform(toBool) @IsBoolean()
  WEBHOOK_ALLOW_PRIVATE = false;

  /** Extension: the first retry's delay; each later one is 4 times the one before, ±20% jitter (docs/API.md, Webhooks). */
  @Transform(toInt) @IsInt() @Min(10) @Max(3_600_000)
  WEBHOOK_RETRY_BASE_MS = 10_000;

  /** Extension: tries per event, the first included, before its delivery counts as failed. */
  @Transform(toInt) @IsInt() @Min(1) @Max(20)
  WEBHOOK_MAX_ATTEMPTS = 7;

  /** Extension: one try's deadline (connect, headers and the bounded body read). */
  @Transform(toInt) @IsInt() @Min(100) @Max(60_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** Extension: how often each instance looks for due deliveries (an event closed here is tried at once). */
  @Transform(toInt) @IsInt() @Min(50) @Max(60_000)
  WEBHOOK_POLL_MS = 2_000;

  /** Extension: how long a rotated-out signing secret still signs (both signatures are sent meanwhile). */
  @Transform(toInt) @IsInt() @Min(0) @Max(2_592_000_000)
  WEBHOOK_SECRET_GRACE_MS = 86_400_000;

  /**
   * Extension (issue 33): what a message does when its conversation's previous turn is still
   * active, unless it names `options.multitask`: `reject` (409 conversation_busy), `enqueue`,
   * `interrupt` or `rollback` (docs/API.md, One turn at a time).
   */
  @IsIn(MULTITASK_STRATEGIES as unknown as string[])
  CONVERSATION_MULTITASK: MultitaskStrategy = 'reject';

  /** Extension: the NarrowTopK tool index; false makes NarrowTopK answer narrow_topk_unavailable. */
  @Transform(toBool) @IsBoolean()
  TOOL_INDEX_ENABLED = true;

  /**
   * Extension: the tool-only mode of a request that names none. Unset: `mode` is required. A
   * request's own `mode` always wins, and the mode a request starts with is the one it ends with.
   */
  @Transform(emptyToUndefined) @IsOptional() @IsIn(ORCHESTRATION_MODES as unknown as string[])
  ORCHESTRATION_DEFAULT_MODE?: OrchestrationMode;

  /** Extension: default of the tool-only `options.maxCalls` (the request's range). */
  @Transform(toInt) @IsInt() @Min(1) @Max(20)
  ORCHESTRATION_MAX_CALLS = 1;

  /** Extension: default of the tool-only `options.narrowTopK` (the request's range). */
  @Transform(toInt) @IsInt() @Min(1) @Max(50)
  ORCHESTRATION_TOP_K = 5;

  /**
   * Extension: default of the tool-only `options.minScoreThreshold`, on the tool index's absolute
   * 0..1 scale. The value is the bench's pick (bench/README.md "Tool retrieval"): the highest
   * threshold that keeps recall@5 within 0.01 of no threshold.
   */
  @Transform(toNumber) @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0) @Max(1)
  ORCHESTRATION_MIN_SCORE = 0.23;

  /**
   * Extension (issue 14): read_file refuses a file with more than one hard link, since a link in
   * the workspace to a file outside it passes every path check. true allows them.
   */
  @Transform(toBool) @IsBoolean()
  FILE_ALLOW_HARDLINKS = false;

  /**
   * Extension (issue 14): an MCP tool a known server adds after its first listing is approved at
   * once instead of held for an admin. A changed definition is held either way.
   */
  @Transform(toBool) @IsBoolean()
  MCP_AUTO_APPROVE = false;

  /** Extension (issue 14): requests per minute per key (not in local mode); 0 turns it off. */
  @Transform(toInt) @IsInt() @Min(0) @Max(1_000_000)
  RATE_LIMIT_PER_MINUTE = 600;

  /** Extension: concurrent running turns per key, across instances (shared database). */
  @Transform(toInt) @IsInt() @Min(1) @Max(100_000)
  MAX_CONCURRENT_TURNS_PER_KEY = 8;

  /** Extension: concurrent running turns per project, across instances (0: no limit). */
  @Transform(toInt) @IsInt() @Min(0) @Max(100_000)
  MAX_CONCURRENT_TURNS_PER_PROJECT = 0;

  /**
   * Extension: concurrent running turns in one instance. 50: where p99 added latency per chunk
   * reaches 100 ms on the load benchmark's 2-core machine (bench/README.md, "Choosing
   * MAX_CONCURRENT_TURNS"); a turn past it is a 429 with Retry-After, not a slower stream for all.
   */
  @Transform(toInt) @IsInt() @Min(1) @Max(100_000)
  MAX_CONCURRENT_TURNS = 50;

  /**
   * Extension: chat turns (unified, two-stage) offer the model every tool while the project's
   * catalog has at most this many; above it, the top TOOL_RETRIEVAL_TOP_K for the turn plus
   * sticky and built-in tools (ToolSelectionService).
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(100_000)
  TOOL_RETRIEVAL_THRESHOLD = 24;

  /** Extension: how many retrieved tools a chat step is offered above the threshold (sticky ones come on top). */
  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  TOOL_RETRIEVAL_TOP_K = 8;

  @IsIn(['error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL: 'error' | 'warn' | 'log' | 'debug' | 'verbose' = 'log';

  /** Extension: `json` (one JSON object a line, for log shippers) or `pretty` (Nest's coloured lines). */
  @IsIn(['json', 'pretty'])
  LOG_FORMAT: 'json' | 'pretty' = 'json';

  /** Extension: put prompts, completions and tool arguments/results on the exported OpenTelemetry spans. */
  @Transform(toBool) @IsBoolean()
  OTEL_CAPTURE_CONTENT = false;
}

export type EnvKey = keyof EnvironmentVariables;

const ALLOWED: Partial<Record<EnvKey, string>> = {
  LLM_PROVIDER: LLM_PROVIDERS.join(' | '),
  LOG_LEVEL: 'error | warn | log | debug | verbose',
  TWO_STAGE_ENABLED: 'true | false',
  ORCHESTRATOR_ENABLED: 'true | false',
  LLM_TOOL_CALLING: 'true | false',
  TOOL_INDEX_ENABLED: 'true | false',
  CONVERSATION_MULTITASK: MULTITASK_STRATEGIES.join(' | '),
  ORCHESTRATION_DEFAULT_MODE: ORCHESTRATION_MODES.join(' | '),
  ORCHESTRATION_MAX_CALLS: '1..20',
  ORCHESTRATION_TOP_K: '1..50',
  ORCHESTRATION_MIN_SCORE: 'a number from 0 to 1',
  FILE_ALLOW_HARDLINKS: 'true | false',
  MCP_AUTO_APPROVE: 'true | false',
  LOG_FORMAT: 'json | pretty',
  OTEL_CAPTURE_CONTENT: 'true | false',
  DATABASE_PREPARED_STATEMENTS: 'true | false',
  WEBHOOK_ALLOW_PRIVATE: 'true | false',
};

/** Validates `process.env`-like input; throws one Error listing every `NAME=value` that is wrong. */
/** LLM_MODELS as names, in order ([] when unset). */
export function modelList(value: string | undefined): string[] {
  return (value ?? '').split(',').map((m) => m.trim()).filter((m) => m.length > 0);
}

export function validateEnv(raw: Record<string, unknown>): EnvironmentVariables {
  // an empty value (docker compose's `VAR: ${VAR:-}`) means unset: the default applies
  const given = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== '' && v !== undefined));
  const env = plainToInstance(EnvironmentVariables, given, { exposeDefaultValues: true });
  if (!env.LLM_PROVIDER) env.LLM_PROVIDER = env.LLM_BASE_URL ? 'openai' : 'replay';
  const models = modelList(env.LLM_MODELS);
  // the allow-list's first entry is the default model unless LLM_MODEL names one of the others
  if (models.length > 0 && env.LLM_MODEL === undefined) env.LLM_MODEL = models[0];
  const errors = validateSync(env, { skipMissingProperties: false, whitelist: false });
  if (models.length > 0 && env.LLM_MODEL !== undefined && !models.includes(env.LLM_MODEL)) {
    errors.push(Object.assign(new ValidationError(), { property: 'LLM_MODEL', value: env.LLM_MODEL, constraints: { inList: `must be one of LLM_MODELS (${models.join(', ')}), or unset to default to the first` } }));
  }
  if (new Set(models).size !== models.length) {
    errors.push(Object.assign(new ValidationError(), { property: 'LLM_MODELS', value: env.LLM_MODELS, constraints: { unique: 'names a model twice' } }));
  }
  // a set API_KEYS that holds no key would silently turn authentication off
  if (env.API_KEYS !== undefined && env.API_KEYS.split(',').every((k) => k.trim() === '')) {
    errors.push(Object.assign(new ValidationError(), { property: 'API_KEYS', value: env.API_KEYS, constraints: { keys: 'must hold at least one non-empty key (comma-separated); unset it to disable authentication' } }));
  }
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const name = e.property as EnvKey;
      const shown = name === 'LLM_API_KEY' || name === 'API_KEYS' ? '<redacted>' : JSON.stringify(raw[name] ?? e.value);
      const allowed = ALLOWED[name] ? ` (allowed: ${ALLOWED[name]})` : '';
      const c = e.constraints ?? {};
      // a value of the wrong type: its type is the one thing to fix
      const messages = c.isInt ? [c.isInt] : c.isBoolean ? [c.isBoolean] : c.isNumber ? [c.isNumber] : Object.values(c);
      return `  ${name}=${shown}: ${messages.join('; ')}${allowed}`;
    });
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return env;
}
