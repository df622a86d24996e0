import { type INestApplication, ValidationPipe } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { ToolRegistryService, type ToolSummary } from './tool-registry.service';
import { ToolsController } from './tools.controller';
import { ToolRunnerService } from './tool-runner.service';
import { ToolApprovalPolicy } from './approval/approval-policy';
import type { ToolDefinition } from './tool-definition';

const summaries: ToolSummary[] = [
  { name: 'list_files', description: 'List files', parameters: { type: 'object' }, origin: 'builtin', available: true },
  { name: 'srv__echo', description: 'Echo', parameters: { type: 'object', properties: { text: { type: 'string' } } }, origin: 'mcp:srv', available: false },
];

describe('GET /api/tools', () => {
  let app: INestApplication;
  let withoutGlobalPipe: INestApplication;

  beforeAll(async () => {
    const build = async (globalPipe: boolean) => {
      const moduleRef = await Test.createTestingModule({
        controllers: [ToolsController],
        providers: [
          { provide: ToolRegistryService, useValue: { summaries: async () => summaries, get: (name: string) => summaries.find((t) => t.name === name) } },
          // the policy itself, without an override: built-ins never wait, an MCP tool without readOnlyHint does
          { provide: ToolRunnerService, useValue: { approvalPolicyOf: async (def: ToolDefinition) => new ToolApprovalPolicy([]).of(def) } },
        ],
      }).compile();
      const a = moduleRef.createNestApplication({ logger: false });
      if (globalPipe) a.useGlobalPipes(new ValidationPipe({ transform: true, whitelist: true }));
      await a.init();
      return a;
    };
    app = await build(true);
    withoutGlobalPipe = await build(false);
  });

  afterAll(async () => {
    await app.close();
    await withoutGlobalPipe.close();
  });

  it('lists the tools with name, description, parameters, origin, availability and approval policy', async () => {
    const res = await request(app.getHttpServer()).get('/api/tools').expect(200);
    expect(res.body).toEqual([
      { ...summaries[0], approval: { required: false, reason: 'none' } },
      { ...summaries[1], approval: { required: true, reason: 'not_read_only' } },
    ]);
  });

  it('accepts a valid projectId', async () => {
    await request(app.getHttpServer()).get('/api/tools?projectId=my_Project-1').expect(200);
    await request(app.getHttpServer()).get(`/api/tools?projectId=${'a'.repeat(64)}`).expect(200);
  });

  it.each(['../x', 'a b', 'a'.repeat(65), '', 'é', 'a/b', '%00'])('answers 400 for projectId=%j', async (projectId) => {
    for (const a of [app, withoutGlobalPipe]) {
      const res = await request(a.getHttpServer()).get('/api/tools').query({ projectId }).expect(400);
      expect(JSON.stringify(res.body.message)).toContain('projectId must match');
    }
  });

  it('answers 400 for a repeated projectId', async () => {
    await request(app.getHttpServer()).get('/api/tools?projectId=a&projectId=b').expect(400);
  });
});
