/**
 * The request bodies Swagger UI's "Try it out" starts from, by operationId. Each one succeeds
 * as it stands against a freshly started service with the defaults (embedded database, replay
 * model, the default project's folder, no keys; or with keys, an admin key given to Authorize),
 * which test/browser/swagger-try-it-out.browser-spec.ts checks by pressing Execute on every one.
 * Without them Swagger UI builds a body from the schema: `"string"` for `options.model` (a 400)
 * and a made-up `conversationId` (a 404). Optional fields that name something that must exist
 * (a conversation, a model, a module) are left out on purpose.
 */
export const REQUEST_EXAMPLES: Readonly<Record<string, unknown>> = {
  sendMessage: {
    projectId: 'default',
    content: 'List the files of this project',
    mode: 'act',
    options: { maxIterations: 10, debugShowToolResults: false, detach: false },
  },
  sendMessageTwoStage: {
    projectId: 'default',
    content: 'List the files of this project',
    mode: 'act',
    options: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, debugShowToolResults: false, detach: false },
  },
  // what the AI SDK's DefaultChatTransport sends; a chat id seen first starts its conversation
  sendUiMessage: {
    id: 'my-first-chat',
    messages: [{ id: 'msg-1', role: 'user', parts: [{ type: 'text', text: 'List the files of this project' }] }],
    trigger: 'submit-message',
  },
  openAiCreateChatCompletion: { model: 'orion-unified', messages: [{ role: 'user', content: 'List the files of this project' }], stream: false },
  openAiCreateResponse: { model: 'orion-unified', input: 'List the files of this project' },
  // a run of yours: a two-stage run's requestId (its start event) and one of its checkpoints (GET /api/chat/runs/{requestId})
  resumeTwoStageRun: { requestId: '0f8fad5b-d9cb-469f-a165-70867728950e', resumeFromPhaseIndex: 2 },
  // any checkpoint of one of your two-stage runs that is not running (the run's id goes in the path)
  forkRun: { fromPhaseIndex: 2 },
  renameConversation: { title: 'Roadmap notes' },
  updateConversationSettings: { orchestratorEnabled: true, customInstructions: 'Answer in one short paragraph.' },
  executeTools: {
    userInput: 'List the files of the project',
    participantIds: ['pawn_1'],
    projectId: 'default',
    mode: 'Classic',
    options: { maxCalls: 1, narrowTopK: 5, minScoreThreshold: 0, locale: 'en' },
  },
  executeToolsStream: {
    userInput: 'List the files of the project',
    participantIds: ['pawn_1'],
    projectId: 'default',
    mode: 'Classic',
    options: { maxCalls: 1, narrowTopK: 5, minScoreThreshold: 0, locale: 'en' },
  },
  ingestKnowledge: { projectId: 'default', path: '.' },
  // the only first key a service without keys accepts (first_key_not_admin otherwise): a user key
  // would turn keys on with nobody left who may create keys
  createApiKey: { name: 'first admin', projects: ['*'], role: 'admin' },
  // the signing secret only: the default URL stays as it is (none on a fresh service), so no
  // answer of a later turn is sent anywhere
  configureProjectWebhook: {},
  approveMcpTool: { hash: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' },
  putToolApprovals: { require: ['fs__*'], exempt: ['fs__read*', 'fs__list*'] },
  putProjectRetention: { runs: '30d', trace: '7d', conversations: 'forever' },
  // a budget far above what trying the routes spends, so later sends still run
  putProjectBudget: { period: 'month', tokens: 50_000_000, warnAt: 0.8 },
  // tokens, not cost: a cost budget is refused while LLM_PRICES prices no configured model (a fresh service)
  putKeyBudget: { period: 'day', tokens: 2_000_000 },
  // an approval of yours: the approval_required event of a run that waits (its ids go in the path)
  decideApproval: { decision: 'approve' },
};

/** Operations whose example needs an id of the caller's own (Swagger UI shows the note). */
export const REQUEST_EXAMPLE_NOTES: Readonly<Record<string, string>> = {
  resumeTwoStageRun:
    'Example: put the requestId of one of your paused two-stage runs (its `start` event) and its latest checkpoint (the last of `checkpoints` in GET /api/chat/runs/{requestId}). A finished or cancelled run is not resumed: fork it (POST /api/chat/runs/{requestId}/fork).',
  forkRun:
    'Example: put the requestId of one of your two-stage runs that is not running in the path, and one of its `checkpoints` (GET /api/chat/runs/{requestId}).',
  approveMcpTool: 'Example: put the `pendingHash` GET /api/admin/mcp-tools lists for the tool you reviewed.',
  putToolApprovals: 'Example: put the project in the path (`default`); this replaces its whole override, and empty lists clear it.',
  createApiKey:
    'Example: the first key of a service without keys (it must be this: an admin key for every project, without expiry). Then give the `key` of the answer to Authorize: every route needs a key from now on. A key for a frontend: `{"name": "shop frontend", "projects": ["default"], "role": "user"}`.',
  configureProjectWebhook:
    "Example: creates the project's signing secret (shown only in this answer) and leaves its default URL as it is. To receive webhooks put your receiver's URL in `url`: a public address, or one on this machine such as `http://127.0.0.1:8787/orion-webhook` when Orion runs with WEBHOOK_ALLOW_PRIVATE=true; `null` removes it.",
  putProjectRetention: 'Example: put the project in the path (`default`). Omitted fields stay as they were; null gives a field back to the deployment\'s RETENTION_* value.',
  putKeyBudget: 'Example: put a key id in the path (`local` without keys; GET /api/admin/keys lists them).',
  putProjectBudget: 'Example: put the project in the path (`default`). A cost budget counts in the currency of LLM_PRICES, and needs a price there for a configured model (else 400 budget_cost_unpriced): `{"period": "day", "cost": 25}`; DELETE removes the budget.',
  decideApproval:
    'Example: put the requestId and approvalId of an `approval_required` event in the path. Deny: `{"decision": "deny", "reason": "…"}`; edit: `{"decision": "approve", "arguments": {…}}`.',
};

const RUN_ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

/**
 * The value "Try it out" puts in each required path or query parameter that has no example of
 * its own, by operationId and name (the operation's own first, then the name's). Ids of things
 * that exist only once you made them (a run, a conversation, a key, an approval) are made-up
 * UUIDs: Execute answers the documented 404 until you put one of yours; the rest name what a
 * fresh service has (the `default` project, the chat of the sendUiMessage example, a model).
 */
export const PARAMETER_EXAMPLES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  '*': {
    requestId: RUN_ID,
    approvalId: '3b0d6c1e-7a0f-4f44-9a57-1f0a1c9d2e11',
    id: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
    projectId: 'default',
    chatId: 'my-first-chat',
    name: 'everything__echo',
    model: 'orion-unified',
  },
  revokeApiKey: { id: '6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b' },
  searchToolIndex: { q: 'list the files of a folder' },
};

const ENVELOPE = { requestId: '0f8fad5b-d9cb-469f-a165-70867728950e', projectId: 'default', conversationId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' };

/** One SSE message as the service writes it. */
function message(event: string, seq: number, phase: string, phaseIndex: number, cycleIndex: number, fields: Record<string, unknown>): string {
  return `event: ${event}\nid: ${seq}\ndata: ${JSON.stringify({ ...ENVELOPE, seq, phase, phaseIndex, cycleIndex, ...fields })}\n\n`;
}

/**
 * A whole short turn as the replay model streams it for the sendMessage example (start … done;
 * the answer's words arrive as one chunk each, shortened here to two chunks). Two-stage sends
 * the same phases, ends its first action phase with `tool_call` and sends no `sources`.
 */
function turn(protocol: 'unified' | 'two-stage', startExtra: Record<string, unknown> = {}): string {
  const call = { id: 'call_replay_1', name: 'list_files', arguments: '{"path":".","recursive":true}' };
  const params = { path: '.', recursive: true };
  const answer = "[replay] This is a recorded demo reply, not a real model. I listed the project's files: the folder has no Markdown or text file to read.";
  const cut = answer.indexOf('I listed');
  const events = [
    message('start', 1, 'action_phase', 0, 0, { protocol, userMessageId: '7c9e6679-7425-40de-944b-e07fc1f90ae7', model: 'replay', ...startExtra }),
    message('phase', 2, 'action_phase', 1, 0, { status: 'start' }),
    message('phase', 3, 'action_phase', 1, 0, { status: 'end', reason: protocol === 'unified' ? 'tool_calls' : 'tool_call' }),
    message('tool_calls', 4, 'action_phase', 1, 0, { calls: [call] }),
    message('phase', 5, 'tool_phase', 2, 1, { status: 'start' }),
    message('tool_progress', 6, 'tool_phase', 2, 1, { tool: 'list_files', callId: call.id, action: 'calling', params, isError: false }),
    message('tool_progress', 7, 'tool_phase', 2, 1, { tool: 'list_files', callId: call.id, action: 'completed', params, isError: false, outcome: 'success', durationMs: 4 }),
    message('phase', 8, 'tool_phase', 2, 1, { status: 'end', reason: 'success' }),
    message('phase', 9, 'action_phase', 3, 1, { status: 'start' }),
    message('chunk', 10, 'action_phase', 3, 1, { content: answer.slice(0, cut) }),
    message('chunk', 11, 'action_phase', 3, 1, { content: answer.slice(cut) }),
    message('phase', 12, 'action_phase', 3, 1, { status: 'end', reason: 'final_answer' }),
  ];
  if (protocol === 'unified') events.push(message('sources', 13, 'action_phase', 3, 1, { data: [], sourceTypes: [], ragCount: 0, webCount: 0, confidence: 'none', metrics: null }));
  events.push(
    message('done', events.length + 1, 'complete', 3, 1, {
      fullContent: answer,
      stopReason: 'final_answer',
      usage: { promptTokens: 2293, completionTokens: 44, totalTokens: 2337, llmCalls: 2 },
      messageId: '16fd2706-8baf-433b-82eb-8c7fada847da',
    }),
  );
  return `\n${events.join('')}`;
}

/**
 * The rest of a two-stage run from its checkpoint 2 (the tool result). A resume continues the
 * paused run in place (its requestId, seq after the last stored event: 8 events up to `paused`);
 * a fork is a new run (its own requestId, seq from 1, start names the parent).
 */
function continuation(kind: 'resume' | 'fork'): string {
  const answer = "[replay] This is a recorded demo reply, not a real model. I listed the project's files: the folder has no Markdown or text file to read.";
  const cut = answer.indexOf('I listed');
  const origin = kind === 'fork' ? { parentRequestId: '3ffcfccd-90b2-4231-bd5f-7daa156cfbf2' } : {};
  const seq = kind === 'fork' ? 0 : 8;
  return (
    '\n' +
    message('start', seq + 1, 'tool_phase', 2, 1, { protocol: 'two-stage', userMessageId: '7c9e6679-7425-40de-944b-e07fc1f90ae7', model: 'replay', resumed: true, resumeFromPhaseIndex: 2, ...origin }) +
    message('phase', seq + 2, 'action_phase', 3, 1, { status: 'start' }) +
    message('chunk', seq + 3, 'action_phase', 3, 1, { content: answer.slice(0, cut) }) +
    message('chunk', seq + 4, 'action_phase', 3, 1, { content: answer.slice(cut) }) +
    message('phase', seq + 5, 'action_phase', 3, 1, { status: 'end', reason: 'final_answer' }) +
    message('done', seq + 6, 'complete', 3, 1, {
      fullContent: answer,
      stopReason: 'final_answer',
      usage: { promptTokens: 1794, completionTokens: 44, totalTokens: 1838, llmCalls: 2 },
      messageId: 'ec884489-2a36-4654-9a9a-4bced2e3a701',
    })
  );
}

/** A whole tool-only run on the stream route: progress by stage, then the result. */
function toolOnlyRun(): string {
  const requestId = ENVELOPE.requestId;
  const exposedTools = ['fetch_page', 'fetch_pages_batch', 'list_files', 'rag_query', 'read_file'];
  const execution = {
    toolName: 'list_files',
    args: { path: '.', recursive: false },
    outcome: 'success',
    resultObject: { path: '.', recursive: false, entries: [], truncated: false, note: 'The folder is empty.' },
    latencyMs: 12,
    isError: false,
  };
  const progress = (seq: number, fields: Record<string, unknown>) => `event: progress\nid: ${seq}\ndata: ${JSON.stringify({ requestId, seq, ...fields })}\n\n`;
  return (
    '\n' +
    progress(1, { stage: 'PrepareTools', exposedTools }) +
    progress(2, { stage: 'LLMDecision', decidedCalls: [{ toolName: 'list_files', args: { path: '.' } }] }) +
    progress(3, { stage: 'ExecuteTool', index: 0, toolName: 'list_files', outcome: 'success', latencyMs: 12 }) +
    progress(4, { stage: 'Finished', isSuccess: true, error: null, totalLatencyMs: 47 }) +
    `event: result\nid: 5\ndata: ${JSON.stringify({
      mode: 'Classic',
      exposedTools,
      decidedCalls: [{ toolName: 'list_files', args: { path: '.' } }],
      executions: [execution],
      isSuccess: true,
      error: null,
      totalLatencyMs: 47,
      requestId,
    })}\n\n`
  );
}

/** The text/event-stream example of each streaming operation: a whole run, not one event. */
export const STREAM_EXAMPLES: Readonly<Record<string, string>> = {
  sendMessage: turn('unified'),
  sendMessageTwoStage: turn('two-stage'),
  resumeTwoStageRun: continuation('resume'),
  forkRun: continuation('fork'),
  streamRunEvents: turn('unified'),
  executeToolsStream: toolOnlyRun(),
};
