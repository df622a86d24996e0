import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { json } from 'express';

/** What main.ts and the e2e tests both apply to an app: body limits, shutdown hooks, Swagger. */
export function configureApp(app: INestApplication): void {
  // 32,000 characters of content, up to 4 bytes each, plus the rest of the body
  app.use(json({ limit: '256kb' }));
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
