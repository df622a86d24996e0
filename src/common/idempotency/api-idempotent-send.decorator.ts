import { applyDecorators } from '@nestjs/common';
import { ApiHeader, ApiUnprocessableEntityResponse } from '@nestjs/swagger';

/** What the header does, on every route that starts a run (docs/API.md, Idempotent sends). */
export const IDEMPOTENCY_HEADER_DESCRIPTION =
  'Optional (added): names this send so that a retry never starts a second turn. The same key with the same body (and route), from the same project, within IDEMPOTENCY_WINDOW_MS (24 h by default), gives the first send\'s run on any instance: a live run\'s events from its first, then live (as a reconnect), a finished one\'s result. Another body with the key: 422 idempotency_key_reused. A keyed run goes on when its client leaves (a retry follows it). 1-255 printable ASCII characters, e.g. a UUID.';

/** The 409 a keyed send can get, for the routes' conflict descriptions. */
export const IDEMPOTENCY_CONFLICT = "idempotency_key_in_use: the key's first send has not started its turn yet (queued behind its conversation's active turn, or still opening); send again shortly.";

export const IDEMPOTENCY_REUSED = 'idempotency_key_reused: the Idempotency-Key was first sent with another route or body (the body names its requestId); nothing is started or stored';

/** The `Idempotency-Key` header, and (unless the route documents its errors in another shape) its 422. */
export function ApiIdempotentSend(opts: { errors?: boolean } = {}): MethodDecorator {
  return applyDecorators(
    // no example value: Swagger UI's "Try it out" sends an optional parameter's example, so one
    // key would go with every route's example, and the second route's would be a 422 (issue #42)
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description: `${IDEMPOTENCY_HEADER_DESCRIPTION} Swagger UI sends none unless you type one (such as 5f0c6f1e-8f0e-4a43-9d8e-2b7f3c1d9a10).`,
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    }),
    ...(opts.errors === false ? [] : [ApiUnprocessableEntityResponse({ description: IDEMPOTENCY_REUSED })]),
  );
}
