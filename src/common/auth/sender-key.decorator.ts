import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { principalOf } from './principal';

/** The id of the API key the guard authenticated (`local` without keys): the key a send's budget and usage belong to. */
export const SenderKey = createParamDecorator((_: unknown, ctx: ExecutionContext): string => principalOf(ctx.switchToHttp().getRequest<Request>()).keyId);
