import { Controller, Delete, Get, Headers, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { edgeProject, PROJECT_HEADER } from '../common/auth/edge-project';
import { principalOf } from '../common/auth/principal';
import { AnyProject } from '../common/auth/project-scope.decorator';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { McpSessionsService } from './mcp-sessions.service';

/**
 * The MCP server (Streamable HTTP) at /mcp: POST carries JSON-RPC messages, GET opens the
 * session's notification stream, DELETE ends the session. The MCP SDK's transport writes every
 * answer itself; the key guard, body guard and throttler run first like on every route. Not in
 * the OpenAPI document: MCP clients speak the MCP specification, docs/API.md says what of it is served.
 * @AnyProject: the project is resolved here (edgeProject) and bound to the session.
 */
@ApiExcludeController()
@Controller('mcp')
@AnyProject()
export class McpController {
  constructor(private readonly sessions: McpSessionsService) {}

  // an `ask` call starts a turn: held to the concurrent-turn limits (and refused while draining) as the chat routes are
  @Post()
  @StartsTurn({ when: callsAsk, project: (req) => edgeProject(principalOf(req), req.headers[PROJECT_HEADER]) })
  post(@Req() req: Request, @Res() res: Response, @Headers(PROJECT_HEADER) project: string | undefined): Promise<void> {
    return this.handle(req, res, project);
  }

  @Get()
  stream(@Req() req: Request, @Res() res: Response, @Headers(PROJECT_HEADER) project: string | undefined): Promise<void> {
    return this.handle(req, res, project);
  }

  @Delete()
  end(@Req() req: Request, @Res() res: Response, @Headers(PROJECT_HEADER) project: string | undefined): Promise<void> {
    return this.handle(req, res, project);
  }

  private handle(req: Request, res: Response, project: string | undefined): Promise<void> {
    const principal = principalOf(req);
    return this.sessions.handle(req, res, req.body, { keyId: principal.keyId, projectId: edgeProject(principal, project) });
  }
}

/** Whether a POSTed JSON-RPC message (or batch) calls the `ask` tool. */
function callsAsk(req: Request): boolean {
  const body: unknown = req.body;
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const msg = m as { method?: unknown; params?: { name?: unknown } } | null;
    return msg?.method === 'tools/call' && msg.params?.name === 'ask';
  });
}
