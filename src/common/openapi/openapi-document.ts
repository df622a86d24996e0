import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { ErrorResponseDto } from '../errors/error-response.dto';
import { mappedRoutes, toOpenApiPath } from '../auth/route-inventory';

/** The security scheme Swagger UI's Authorize button fills in (API_KEYS). */
export const BEARER_SCHEME = 'bearer';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * The OpenAPI document `/docs-json` serves and `npm run openapi` writes to docs/openapi.json.
 * Built from the controllers' decorators, then completed in one place for what every route
 * shares: the bearer requirement (none on /api/health), a 401 on every keyed route, and the
 * 400 wherever input is validated, and the error body on every 4xx/5xx answer. Must not depend on configuration or time, so that the
 * committed file and the served document can be compared.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Orion')
    .setDescription(
      'Runs LLM tool-calling turns for chat products and keeps them under control. ' +
        'The contract in prose, with every SSE event and the run-control rules: docs/API.md in the repository. ' +
        'When the service runs with API_KEYS set, every /api route but the health probes needs `Authorization: Bearer <key>` (use Authorize).',
    )
    .setVersion('0.1.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque key', description: 'one of the keys in API_KEYS' }, BEARER_SCHEME)
    .addSecurityRequirements(BEARER_SCHEME)
    .build();
  const doc = SwaggerModule.createDocument(app, config, { extraModels: [ErrorResponseDto] });
  // the routes marked @Public(), the same metadata the ApiKeyGuard reads
  const publicOps = new Set(mappedRoutes(app).filter((r) => r.isPublic).map((r) => `${r.method.toLowerCase()} ${toOpenApiPath(r.path)}`));
  const errorBody = { 'application/json': { schema: { $ref: getSchemaPath(ErrorResponseDto) } } };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (publicOps.has(`${method} ${path}`)) op.security = [];
      else op.responses['401'] ??= { description: 'API_KEYS is set and the request has no valid key' };
      // the global ValidationPipe (and ParseUUIDPipe) refuse bad input on every route that takes any
      if ((op.requestBody || op.parameters?.length) && !op.responses['400']) op.responses['400'] = { description: 'invalid parameters or body (nothing changes)' };
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) >= 400 && response && 'description' in response && !response.content) response.content = errorBody;
      }
    }
  }
  return doc;
}
