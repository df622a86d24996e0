import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import type { Request, RequestHandler, Response } from 'express';
import { edgeProjectOf } from '../common/auth/edge-project';
import { principalOf } from '../common/auth/principal';
import { AnyProject } from '../common/auth/project-scope.decorator';
import { Public } from '../common/auth/public.decorator';
import { jsonRpcMessages } from '../common/body/json-rpc-messages';
import { keepTurnUntil } from '../common/limits/turn-hold';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { A2A_PATH, agentCard } from './a2a-card';
import { A2aTurnsService, OrionA2aUser } from './a2a-turns.service';

/** The request's Orion user, set here after the key guard and read by the SDK's user builder. */
const USER = Symbol('orion.a2a.user');
type WithUser = Request & { [USER]?: OrionA2aUser };

/**
 * The A2A agent: its card at the well-known path (public, as A2A clients read it before they
 * authenticate) and its JSON-RPC endpoint at /a2a, served by the SDK's own JSON-RPC transport
 * (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe) over
 * A2aTurnsService. The key guard, body guard and throttler run first like on every route. Not
 * in the OpenAPI document: A2A clients speak the A2A specification; docs/API.md says what is served.
 */
@ApiExcludeController()
@Controller()
export class A2aController {
  private readonly rpc: RequestHandler;

  constructor(turns: A2aTurnsService) {
    this.rpc = jsonRpcHandler({
      requestHandler: turns,
      userBuilder: async (req) => {
        const user = (req as WithUser)[USER];
        if (!user) throw new Error('A2A request without its Orion user');
        return user;
      },
    });
  }

  @Public()
  @Get(AGENT_CARD_PATH)
  card(@Req() req: Request) {
    return agentCard(`${req.protocol}://${req.get('host')}`);
  }

  // a message starts a task (a detached turn): held to the concurrent-turn limits until the task
  // ends, past the response (and refused while draining), as the chat routes' detached turns are
  @Post(A2A_PATH)
  @AnyProject()
  @StartsTurn({ when: sendsMessage, project: edgeProjectOf })
  rpcCall(@Req() req: Request, @Res() res: Response): Promise<void> {
    (req as WithUser)[USER] = new OrionA2aUser(principalOf(req).keyId, edgeProjectOf(req), (ended) => keepTurnUntil(res, ended));
    // the SDK's router matches its own root: Nest has routed the request already
    req.url = '/';
    return new Promise<void>((resolve, reject) => {
      res.once('finish', () => resolve());
      res.once('close', () => resolve());
      this.rpc(req, res, (err?: unknown) => (err ? reject(err) : resolve()));
    });
  }
}

/** Whether a POSTed JSON-RPC message (or batch) sends a message, i.e. starts a task. */
function sendsMessage(req: Request): boolean {
  return jsonRpcMessages(req).some((m) => m.method === 'SendMessage' || m.method === 'SendStreamingMessage');
}
