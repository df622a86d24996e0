import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { OpenAiErrorResponseDto } from './dto/chat-completion-response.dto';
import { errorType } from './openai-error';

/** What each error status of a /v1 route means, with one example body (code, param). */
const STATUSES: Record<number, { description: string; code: string | null; param?: string; message: string }> = {
  400: { description: 'invalid request: a refused or unknown parameter, bad JSON, an unknown model, bad messages (nothing is stored)', code: 'unsupported_parameter', param: 'tools', message: 'Orion runs its own tools server-side; a request may not declare tools (param tools)' },
  401: { description: 'API_KEYS or database keys are in use and Authorization: Bearer <key> is missing or wrong', code: null, message: 'Missing or invalid API key: send Authorization: Bearer <key>' },
  404: { description: 'conversation_not_found (X-Orion-Conversation), model_not_found, an unknown project for a project-bound key, or an unknown /v1 path', code: 'conversation_not_found', message: 'Conversation 1b4e28ba-2fa1-11d2-883f-0016d3cca427 not found in project default' },
  409: {
    description:
      'approval_required (stream: false): the turn waits for a person to approve a tool call; answered at once with x-should-retry: false, error.orion names the run, the approval and the route that decides it, and the run waits on (added). idempotency_key_in_use: the key\'s first send has not started its turn yet; send again shortly. conversation_busy: the conversation\'s previous turn is still active',
    code: 'approval_required',
    message: 'The turn waits for approval of read_file (approvalId 7c9e6679-7425-40de-944b-e07fc1f90ae7); decide it with POST /api/chat/runs/0f8fad5b-d9cb-469f-a165-70867728950e/approvals/7c9e6679-7425-40de-944b-e07fc1f90ae7 {"decision":"approve"} or {"decision":"deny"}. The run goes on once it is decided: send this request again with the same Idempotency-Key for its answer',
  },
  413: { description: 'the body is over MAX_BODY_BYTES (nothing is stored)', code: null, message: 'The request body is larger than MAX_BODY_BYTES=262144 bytes (300000 bytes sent)' },
  415: { description: 'the body is not sent as Content-Type: application/json', code: null, message: 'The request body must be JSON: send the header Content-Type: application/json (got "text/plain")' },
  422: {
    description: 'idempotency_key_reused (added): the Idempotency-Key was first sent with another body or X-Orion-Conversation; nothing is started or stored',
    code: 'idempotency_key_reused',
    message: 'Idempotency-Key "5f0c6f1e-8f0e-4a43-9d8e-2b7f3c1d9a10" was first sent with another route or body (request 0f8fad5b-d9cb-469f-a165-70867728950e); a key stands for one request: send a new key for a new request. Nothing was started or stored',
  },
  429: { description: 'too_many_requests: over RATE_LIMIT_PER_MINUTE or a running-turn limit; Retry-After says when to retry', code: 'too_many_requests', message: 'Too many turns running on this instance: MAX_CONCURRENT_TURNS=8; retry after 2 s' },
  500: { description: 'a failed turn (stream: false; x-should-retry: false, since the turn ran and is stored) or a bug', code: 'internal_error', message: 'Internal server error' },
  502: { description: 'the model provider failed during the turn (stream: false; x-should-retry: false); code names the failure (llm_timeout, llm_server_error…)', code: 'llm_server_error', message: 'The model server answered 500' },
  503: { description: 'database_unavailable: nothing was stored; retry later', code: 'database_unavailable', message: 'The database cannot be reached; try again shortly' },
};

/** Documents a /v1 route's error answers in OpenAI's shape (the OpenAPI builder fills in Orion's shape only where nothing is declared). */
export function ApiOpenAiErrors(...statuses: number[]): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(OpenAiErrorResponseDto),
    ...statuses.map((status) => {
      const s = STATUSES[status];
      const example = { error: { message: s.message, type: errorType(status), param: s.param ?? null, code: s.code } };
      return ApiResponse({
        status,
        description: s.description,
        ...(status === 429 ? { headers: { 'Retry-After': { description: 'seconds until a retry may succeed', schema: { type: 'integer' } } } } : {}),
        content: { 'application/json': { schema: { $ref: getSchemaPath(OpenAiErrorResponseDto) }, examples: { [s.code ?? errorType(status)]: { summary: s.description, value: example } } } },
      });
    }),
  );
}
