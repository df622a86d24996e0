import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import request from 'supertest';
import { PAGE_CSP } from './content-security-policy';
import { ASSETS_DIR, PUBLIC_DIR } from './static-files';
import { WebModule } from './web.module';

describe('WebController: pages, assets, vendor files', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [WebModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(() => app.close());

  const http = () => request(app.getHttpServer());

  it.each(['/', '/debug'])('serves %s as HTML under the Content-Security-Policy', async (path) => {
    const res = await http().get(path).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it('has the directives issue #7 asks for', () => {
    const directives = Object.fromEntries(PAGE_CSP.split('; ').map((d) => [d.split(' ')[0], d.slice(d.indexOf(' ') + 1)]));
    expect(directives).toMatchObject({
      'script-src': "'self'",
      'img-src': "'self' data:",
      'object-src': "'none'",
      'base-uri': "'none'",
      'frame-ancestors': "'none'",
      'connect-src': "'self'",
      'style-src': "'self'",
    });
  });

  it('pages carry no inline script, event handler or style (the CSP would block them)', () => {
    for (const file of ['index.html', 'debug.html']) {
      const html = readFileSync(join(PUBLIC_DIR, file), 'utf8');
      expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
      expect(html).not.toMatch(/\son[a-z]+\s*=/i);
      expect(html).not.toMatch(/\sstyle\s*=/i);
      expect(html).not.toMatch(/<style/i);
    }
  });

  it('serves every script and stylesheet the pages reference', async () => {
    const refs = ['index.html', 'debug.html'].flatMap((f) =>
      [...readFileSync(join(PUBLIC_DIR, f), 'utf8').matchAll(/(?:src|href)="(\/(?:assets|vendor)\/[^"]+)"/g)].map((m) => m[1]),
    );
    expect(refs).toEqual(expect.arrayContaining(['/assets/style.css', '/assets/chat.js', '/assets/debug.js', '/vendor/marked.js', '/vendor/purify.js']));
    for (const ref of new Set(refs)) {
      const res = await http().get(ref).expect(200);
      expect(res.headers['content-type']).toMatch(ref.endsWith('.css') ? /^text\/css/ : /^(text|application)\/javascript/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('serves every module the scripts import', async () => {
    const imports = readdirSync(ASSETS_DIR)
      .filter((f) => f.endsWith('.js'))
      .flatMap((f) => [...readFileSync(join(ASSETS_DIR, f), 'utf8').matchAll(/from '\.\/([^']+)'/g)].map((m) => m[1]));
    for (const name of new Set(imports)) await http().get(`/assets/${name}`).expect(200);
  });

  it('serves the browser builds of marked and DOMPurify from node_modules', async () => {
    const marked = await http().get('/vendor/marked.js').expect(200);
    expect(marked.text).toContain('marked');
    const purify = await http().get('/vendor/purify.js').expect(200);
    expect(purify.text).toContain('DOMPurify');
  });

  it('stays out of the OpenAPI document', () => {
    const doc = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    expect(Object.keys(doc.paths)).toEqual([]);
  });

  it.each(['/assets/nope.js', '/assets/..%2Fweb.module.ts', '/assets/style.css.map', '/assets/.hidden.js', '/vendor/lodash.js', '/vendor/constructor', '/assets/README.md'])(
    '404s %s',
    async (path) => {
      const res = await http().get(path).expect(404);
      expect(res.body).toMatchObject({ statusCode: 404 });
    },
  );
});
