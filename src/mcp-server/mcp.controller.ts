import { Controller, Delete, Get, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { edgeProjectOf } from '../common/auth/edge-project';
import { principalOf } from '../common/auth/principal';
import { AnyProject } from '../common/auth/project-scope.decorator';
import { jsonRpcMessages } from '../common/body/json-rpc-messages';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { McpSessionsService } from './mcp-sessions.service';

/**
 * The MCP server (Streamable HTTP) at /mcp: POST carries JSON-RPC messages, GET opens the
 * session's notification stream, DELETE ends the session. The MCP SDK's transport writes every
 * answer itself; the key guard, body guard and throttler run first like on every route. Not in
 * the OpenAPI document: MCP clients speak the MCP specification, docs/API.md says what of it is served.
 * @AnyProject: the project is resolved here (edgeProjectOf) and bound to the session.
 */
@ApiExcludeController()
@Controller('mcp')
@AnyProject()
export class McpController {
  constructor(private readonly sessions: McpSessionsService) {}

  // an `ask` call starts a turn: held to the concurrent-turn limits (and refused while draining) as the chat routes are
  @Post()
  @StartsTurn({ when: callsAsk, project: edgeProjectOf })
  post(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.handle(req, res);
  }

  @Get()
  stream(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.handle(req, res);
  }

  @Delete()
  end(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.handle(req, res);
  }

  private handle(req: Request, res: Response): Promise<void> {
    return this.sessions.handle(req, res, req.body, { keyId: principalOf(req).keyId, projectId: edgeProjectOf(req) });
  }
}

/** Whether a POSTed JSON-RPC message (or batch) calls the `ask` tool. */
function callsAsk(req: Request): boolean {
  return jsonRpcMessages(req).some((m) => m.method === 'tools/call' && (m.params as { name?: unknown } | null)?.name === 'ask');
}
