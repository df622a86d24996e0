import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { BadRequestException } from '@nestjs/common';
import { json, type NextFunction, type Request, type Response } from 'express';

/** Deeper JSON than any route accepts; deeper bodies are refused before validation recurses into them. */
export const MAX_BODY_DEPTH = 64;

/** Depth of a parsed JSON value, without recursion (a hostile body cannot overflow the stack here). */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return max;
}

/** What main.ts and the e2e tests both apply to an app: body limits, shutdown hooks, Swagger. */
export function configureApp(app: INestApplication): void {
  // 32,000 characters of content, up to 4 bytes each, plus the rest of the body
  app.use(json({ limit: '256kb' }));
  app.use((req: Request, _res: Response, next: NextFunction) => {
    if (req.body !== undefined && jsonDepth(req.body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      return next(new BadRequestException(`Request body is nested deeper than ${MAX_BODY_DEPTH} levels`));
    }
    next();
  });
  app.enableShutdownHooks();
  const doc = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Orion')
      .setDescription('Runs LLM tool-calling turns for chat products and keeps them under control. Contract: shared/API.md.')
      .setVersion('0.1.0')
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('docs', app, doc, { jsonDocumentUrl: 'docs-json' });
}
