/**
 * Example error bodies for the OpenAPI document, one per error code (docs/API.md, "Errors"),
 * and which codes each operation can answer. buildOpenApiDocument gives every error answer of
 * an operation the examples of its own codes for that status, and the generic body of the
 * status where the operation has no code of its own, so Swagger UI no longer shows one
 * `404 run_not_found` body under every status.
 */

export interface ErrorExample {
  status: number;
  summary: string;
  body: Record<string, unknown>;
}

const RUN = '0f8fad5b-d9cb-469f-a165-70867728950e';
const CONVERSATION = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';

const example = (status: number, error: string, message: string | string[], summary: string, extra: Record<string, unknown> = {}): ErrorExample => ({
  status,
  summary,
  body: { statusCode: status, error, message, ...extra },
});

/** By code: the domain codes, and the generic ones (HTTP status text) every operation may answer. */
export const ERROR_EXAMPLES: Readonly<Record<string, ErrorExample>> = {
  'Bad Request': example(400, 'Bad Request', ['content is required (a string)'], 'invalid body, query or path parameter: one message per bad field', {
    fields: [{ field: 'content', message: 'content is required (a string)' }],
  }),
  Unauthorized: example(401, 'Unauthorized', 'Missing or invalid API key: send Authorization: Bearer <key>', 'API_KEYS (or a database key) is set and the key is missing or wrong'),
  Forbidden: example(403, 'Forbidden', 'This route needs an admin key', 'a user key on an admin route, or a project-bound key on a route that reads every project'),
  'Not Found': example(404, 'Not Found', 'Not Found', 'nothing by that id'),
  'Unsupported Media Type': example(415, 'Unsupported Media Type', 'The request body must be JSON: send the header Content-Type: application/json (got "text/plain")', 'a body sent without Content-Type: application/json'),
  'Payload Too Large': example(413, 'Payload Too Large', 'The request body is larger than MAX_BODY_BYTES=262144 bytes', 'a body over MAX_BODY_BYTES (default 256 KiB)', { limit: 'MAX_BODY_BYTES', max: 262144 }),
  too_many_requests: example(429, 'too_many_requests', 'Too many requests for this key: RATE_LIMIT_PER_MINUTE=600; retry after 42 s', 'over RATE_LIMIT_PER_MINUTE for this key (Retry-After says when to try again)', {
    limit: 'RATE_LIMIT_PER_MINUTE',
    max: 600,
    retryAfter: 42,
  }),
  too_many_turns: example(429, 'too_many_requests', 'Too many turns running for this key: MAX_CONCURRENT_TURNS_PER_KEY=8; retry after 1 s', 'over a running-turn limit (per key, per project or per instance)', {
    limit: 'MAX_CONCURRENT_TURNS_PER_KEY',
    max: 8,
    retryAfter: 1,
  }),
  database_unavailable: example(503, 'database_unavailable', 'The database cannot be reached; try again shortly', 'the database is down or restarting: nothing was stored, retry later'),
  model_not_allowed: example(400, 'model_not_allowed', 'options.model "gpt-x" is not an allowed model (allowed: replay); nothing was stored', 'a model outside LLM_MODELS', { allowed: ['replay'] }),
  conversation_busy: example(409, 'conversation_busy', `Conversation ${CONVERSATION} has an active turn (${RUN}); nothing was stored. Send with options.multitask enqueue, interrupt or rollback, or cancel that turn`, 'the conversation\'s previous turn is still active and options.multitask is reject (the default)', { requestId: RUN }),
  conversation_not_found: example(404, 'conversation_not_found', `Conversation ${CONVERSATION} not found in project default`, 'unknown conversationId (in that project)'),
  two_stage_disabled: example(404, 'two_stage_disabled', 'The two-stage route is disabled; start Orion with TWO_STAGE_ENABLED=true', 'TWO_STAGE_ENABLED is not true'),
  run_not_found: example(404, 'run_not_found', `Run ${RUN} not found`, 'unknown requestId'),
  checkpoint_not_found: example(404, 'checkpoint_not_found', `Run ${RUN} has no checkpoint at phase 4`, 'no checkpoint at that phase; checkpoints lists those that exist', { checkpoints: [2] }),
  run_not_resumable: example(409, 'run_not_resumable', `Run ${RUN} uses unified, which has no pause point; only two-stage runs pause (cancel stops any run)`, 'not a two-stage run, or not running'),
  run_finished: example(409, 'run_finished', `Run ${RUN} is already completed`, 'the run has already ended'),
  run_finished_resume: example(
    409,
    'run_finished',
    `Run ${RUN} is completed; only a paused run can be resumed; to continue from one of its checkpoints (2, 4) as a new run, fork it: POST /api/chat/runs/${RUN}/fork {"fromPhaseIndex": n}`,
    'a completed or failed run: resume never forks; the message names the fork route',
    { checkpoints: [2, 4] },
  ),
  run_cancelled: example(
    409,
    'run_cancelled',
    `Run ${RUN} was cancelled, and a cancelled run is never resumed; to continue from one of its checkpoints (2) as a new run, fork it: POST /api/chat/runs/${RUN}/fork {"fromPhaseIndex": n}`,
    'a cancel is final: nothing changes',
    { checkpoints: [2] },
  ),
  run_not_latest_checkpoint: example(
    409,
    'run_not_resumable',
    `Run ${RUN} resumes only from its latest checkpoint (phase 4); to continue from one of its checkpoints (2, 4) as a new run, fork it: POST /api/chat/runs/${RUN}/fork {"fromPhaseIndex": n}`,
    'a paused run resumes from its latest checkpoint only; an older one is a fork',
    { checkpoints: [2, 4] },
  ),
  fork_running: example(409, 'run_in_progress', `Run ${RUN} is running; pause or cancel it, or let it end, before forking it`, 'the run is still running', { requestId: RUN }),
  resume_in_progress: example(409, 'resume_in_progress', `Run ${RUN} is running (another resume may have started it); pause it before resuming`, 'the run is running, or another resume won'),
  run_in_progress: example(409, 'run_in_progress', `Run ${RUN} of this conversation is still running: cancel it (POST /api/chat/runs/${RUN}/cancel) or let it end, then delete`, 'a run of the conversation is still running; nothing is deleted', { requestId: RUN }),
  unknown_mode: example(400, 'unknown_mode', ['mode must be one of: Classic, NarrowTopK (got "Fast")'], 'a mode other than Classic / NarrowTopK, the only bad field (beside others: one entry of their Bad Request list)', {
    fields: [{ field: 'mode', message: 'mode must be one of: Classic, NarrowTopK (got "Fast")' }],
  }),
  knowledge_invalid_path: example(400, 'knowledge_invalid_path', 'path "../other" leads outside the project folder; only files inside it can be used', 'an absolute path, or one that leaves the project folder'),
  knowledge_path_not_found: example(404, 'knowledge_path_not_found', '"docs" does not exist in the folder of project "default"', 'the project folder, or the path in it, does not exist'),
  approval_not_found: example(404, 'approval_not_found', `Run ${RUN} has no approval 3b0d6c1e-7a0f-4f44-9a57-1f0a1c9d2e11`, 'the run never asked for that approval'),
  approval_not_pending: example(409, 'approval_not_pending', 'Approval 3b0d6c1e-7a0f-4f44-9a57-1f0a1c9d2e11 is already approved by key_12ab', 'already decided, expired or void; says which, and by whom', {
    status: 'approved',
    by: 'key_12ab',
    decidedAt: '2026-11-27T13:45:00.000Z',
  }),
  run_not_awaiting: example(409, 'run_not_awaiting', `Run ${RUN} is paused; it does not wait for a decision`, 'the run does not wait for a decision (paused, cancelled, finished)', { status: 'paused' }),
  invalid_approval: example(400, 'invalid_approval', 'The edited arguments cannot be used for read_file: /path must be string', 'arguments with deny, or edited arguments the tool refuses; nothing changed', {
    errors: ['/path must be string'],
  }),
  first_key_not_admin: example(
    409,
    'first_key_not_admin',
    'The first key turns keys on for good: from then on every route needs a key, and only an admin key for every project can create keys. So the first key must be {"projects": ["*"], "role": "admin"} without expiresAt; create it, give it to Authorize (or send Authorization: Bearer <key>), then create user keys with it',
    'no key exists yet and this one is not an admin key for every project without expiry; nothing is stored',
  ),
  last_admin_key: example(
    409,
    'last_admin_key',
    'Key 6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b is the last active admin key for every project and API_KEYS is not set: revoking it would leave every route answering 401. Create another admin key first (POST /api/admin/keys {"name": …, "projects": ["*"], "role": "admin"}), then revoke this one; or use `npm run keys -- revoke <id>` from a shell on the service\'s database. Nothing was changed',
    'API_KEYS is not set and this is the last active admin key for every project; nothing changes',
  ),
  invalid_idempotency_key: example(400, 'invalid_idempotency_key', 'The Idempotency-Key header must be 1-255 printable ASCII characters, e.g. a UUID (got 300 characters); nothing was started or stored', 'an Idempotency-Key header that is empty, too long or not printable ASCII'),
  idempotency_key_reused: example(
    422,
    'idempotency_key_reused',
    `Idempotency-Key "5f0c6f1e-8f0e-4a43-9d8e-2b7f3c1d9a10" was first sent with another route or body (request ${RUN}); a key stands for one request: send a new key for a new request. Nothing was started or stored`,
    'the key was first sent with another route or body; nothing is started or stored',
    { requestId: RUN },
  ),
  idempotency_key_in_use: example(
    409,
    'idempotency_key_in_use',
    `Idempotency-Key "5f0c6f1e-8f0e-4a43-9d8e-2b7f3c1d9a10": request ${RUN} is queued behind its conversation's active turn; send the same request again shortly. Nothing was started`,
    "the key's first send has not started its turn yet (or, on tool-only execution, is still executing)",
    { requestId: RUN, retryAfter: 1 },
  ),
  mcp_not_found: example(404, 'Not Found', 'No MCP tool everything__echo', 'no such MCP tool was ever listed'),
  mcp_not_awaiting: example(409, 'Conflict', 'everything__echo has no definition awaiting approval', 'nothing awaits approval, or the definition changed again (another pendingHash)'),
};

/** Codes that start a turn (they count against the running-turn limits). */
const TURN = ['too_many_turns'];
/** Codes of a send's Idempotency-Key (docs/API.md, Idempotent sends). */
const KEYED = ['invalid_idempotency_key', 'idempotency_key_reused', 'idempotency_key_in_use'];

/** The domain codes each operation can answer, besides the generic ones of its statuses. */
export const OPERATION_ERRORS: Readonly<Record<string, readonly string[]>> = {
  sendMessage: ['model_not_allowed', 'conversation_not_found', 'conversation_busy', 'database_unavailable', ...TURN, ...KEYED],
  sendMessageTwoStage: ['model_not_allowed', 'two_stage_disabled', 'conversation_not_found', 'conversation_busy', 'database_unavailable', ...TURN, ...KEYED],
  resumeTwoStageRun: ['two_stage_disabled', 'run_not_found', 'checkpoint_not_found', 'resume_in_progress', 'run_cancelled', 'run_finished_resume', 'run_not_latest_checkpoint', 'run_not_resumable', ...TURN],
  forkRun: ['two_stage_disabled', 'run_not_found', 'checkpoint_not_found', 'fork_running', 'run_not_resumable', ...TURN],
  sendUiMessage: ['model_not_allowed', 'conversation_not_found', 'conversation_busy', 'database_unavailable', ...TURN, ...KEYED],
  listConversationMessages: ['conversation_not_found'],
  renameConversation: ['conversation_not_found'],
  updateConversationSettings: ['model_not_allowed', 'conversation_not_found'],
  deleteConversation: ['conversation_not_found', 'run_in_progress'],
  getRun: ['run_not_found'],
  streamRunEvents: ['run_not_found'],
  cancelRun: ['run_not_found', 'run_finished'],
  pauseRun: ['run_not_found', 'run_not_resumable'],
  executeTools: ['unknown_mode', ...TURN, ...KEYED],
  executeToolsStream: ['unknown_mode', ...TURN],
  ingestKnowledge: ['knowledge_invalid_path', 'knowledge_path_not_found'],
  approveMcpTool: ['mcp_not_found', 'mcp_not_awaiting'],
  createApiKey: ['first_key_not_admin'],
  revokeApiKey: ['last_admin_key'],
  listRunApprovals: ['run_not_found'],
  decideApproval: ['invalid_approval', 'run_not_found', 'approval_not_found', 'approval_not_pending', 'run_not_awaiting'],
};

/** The generic example of each status, for an operation with no code of its own there. */
export const STATUS_EXAMPLES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'too_many_requests',
  503: 'database_unavailable',
};
