import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { McpScope, McpTurnsService } from './mcp-turns.service';

const UUID_MESSAGE = 'must be a UUID';

const source = z.object({ type: z.string(), title: z.string(), url: z.string().optional(), path: z.string().optional(), snippet: z.string().optional() });
const toolStep = z.object({ name: z.string(), status: z.enum(['completed', 'failed', 'refused']), outcome: z.string().optional() });

/**
 * The descriptions are what a calling model reads to pick a tool, so they say what Orion does
 * with the call, what comes back and how to continue, not how it is built.
 */
const ASK_DESCRIPTION = [
  "Ask Orion, a research assistant for this project: it runs a whole turn on the server, using its own tools",
  "(the project's files, its knowledge base, web search and fetch, configured MCP tools) and answers in prose with the sources it used.",
  'Use it for questions about the project\'s documents or anything that needs looking up; one call is one question.',
  'To ask a follow-up in the same conversation, pass the conversationId of the earlier answer. Long turns send progress;',
  'cancelling the call cancels the turn. When a tool call needs a person\'s approval, ask answers at once with stopReason awaiting_approval and the approval;',
  'once it is decided on Orion\'s approvals route, get_answer with the requestId gives the answer.',
].join(' ');

/** One McpServer per session, its tools bound to the session's project. */
export function buildMcpServer(turns: McpTurnsService, scope: McpScope, version: string): McpServer {
  const server = new McpServer({ name: 'orion', title: 'Orion', version }, { instructions: 'Orion answers questions about this project with sources; call ask with the question.' });

  server.registerTool(
    'ask',
    {
      title: 'Ask Orion',
      description: ASK_DESCRIPTION,
      inputSchema: {
        question: z.string().min(1).max(32_000).describe('the question or request, in natural language'),
        conversationId: z.uuid(UUID_MESSAGE).optional().describe('continue this conversation (from an earlier answer); omit to start a new one'),
        route: z.enum(['unified', 'two-stage']).optional().describe('how Orion runs the turn: unified (default, one model loop) or two-stage (plan, then act; when enabled)'),
      },
      outputSchema: {
        answer: z.string().describe('the answer text'),
        requestId: z.string().describe("the turn's run id (for get_run_trace)"),
        conversationId: z.string().describe('pass it to ask to continue'),
        stopReason: z.string().describe('final_answer when the turn answered; cancelled, error or a loop limit otherwise; awaiting_approval (or running, from get_answer) while it goes on'),
        sources: z.array(source).describe('the knowledge-base documents and web pages the answer rests on'),
        tools: z.array(toolStep).describe('the tools Orion ran for the answer'),
        error: z.object({ code: z.string(), message: z.string() }).optional(),
        approval: z.object({ approvalId: z.string(), tool: z.string(), arguments: z.unknown(), decide: z.string() }).optional().describe('the call that waits for a person, and where to decide it'),
      },
      annotations: { readOnlyHint: false, openWorldHint: true },
    },
    (args, extra) =>
      turns.ask(scope, args, {
        signal: extra.signal,
        progressToken: extra._meta?.progressToken,
        notify: (params) => extra.sendNotification({ method: 'notifications/progress', params }),
      }),
  );

  server.registerTool(
    'get_answer',
    {
      title: "Get a turn's answer",
      description: "The answer of an earlier ask (its requestId), for a turn that was waiting for a person's approval or still running: the answer once the turn has ended, else where it stands. waitSeconds waits up to that long for the end.",
      inputSchema: {
        requestId: z.uuid(UUID_MESSAGE).describe('the requestId of an ask result'),
        waitSeconds: z.number().int().min(0).max(50).optional().describe('wait up to this many seconds for the turn to end (default 0: answer at once)'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) => turns.answer(scope, args.requestId, args.waitSeconds ?? 0),
  );

  server.registerTool(
    'list_conversations',
    {
      title: 'List conversations',
      description: "The conversations of this project, newest first, with their ids and titles: pick one to continue with ask's conversationId.",
      inputSchema: { limit: z.number().int().min(1).max(200).optional().describe('at most this many (default 20)') },
      outputSchema: {
        projectId: z.string(),
        conversations: z.array(z.object({ id: z.string(), title: z.string(), createdAt: z.string(), updatedAt: z.string() })),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) => turns.listConversations(scope, args.limit ?? 20),
  );

  server.registerTool(
    'get_run_trace',
    {
      title: "Read a turn's trace",
      description: "The trace of one Orion turn (the requestId of an ask result): its status and every step it took, in order (model calls, tool calls and results, approvals, the end). For explaining or debugging an answer.",
      inputSchema: { requestId: z.uuid(UUID_MESSAGE).describe('the requestId of an ask result') },
      outputSchema: {
        requestId: z.string(),
        conversationId: z.string(),
        status: z.string(),
        stopReason: z.string().nullable(),
        events: z.array(z.object({ type: z.string(), details: z.record(z.string(), z.unknown()), createdAt: z.string() })),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) => turns.runTrace(scope, args.requestId),
  );
  return server;
}
