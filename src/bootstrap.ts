import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { BadRequestException } from '@nestjs/common';
import { json, type NextFunction, type Request, type Response } from 'express';

/** Deeper JSON than any route accepts; deeper bodies are refused before validation recurses into them. */
export const MAX_BODY_DEPTH = 64;

/** Whether any string (or key) of a parsed JSON value holds U+0000 (PostgreSQL cannot store it). */
export function hasNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        if (k.includes('\u0000')) return true;
        stack.push(x);
      }
    }
  }
  return false;
}

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
    if (/%00|\u0000/i.test(req.originalUrl)) return next(new BadRequestException('The URL must not contain NUL characters (%00)'));
    if (req.body !== undefined && jsonDepth(req.body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      return next(new BadRequestException(`Request body is nested deeper than ${MAX_BODY_DEPTH} levels`));
    }
    if (req.body !== undefined && hasNul(req.body)) return next(new BadRequestException('The request body must not contain NUL characters (\\u0000)'));
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
