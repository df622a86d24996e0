import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from './app';
import { ReplayServer, respond } from './replay-server';
import type { SseEvent, SseResponse } from './sse-client';

/**
 * What the approval specs of the two chat routes (two-stage, unified) share: the environment
 * that asks a person before read_file, the workspace the model reads, and the case that must
 * hold on either route alike, keys bound to projects.
 */

export const APPROVALS_ROOT_KEY = 'root-admin-key';

/** The app's environment: the scripted model, read_file needing a person. */
export const approvalEnv = (llm: ReplayServer, extra: Record<string, string> = {}) => ({
  LLM_PROVIDER: 'openai',
  LLM_BASE_URL: llm.openAiBaseUrl,
  LLM_MODEL: 'scripted-model',
  TOOLS_REQUIRE_APPROVAL: 'read_file',
  ...extra,
});

/** docs/roadmap.md and docs/other.md in the project's workspace folder. */
export function seedWorkspace(t: TestApp, project = 'default'): void {
  mkdirSync(join(t.workspace, project, 'docs'), { recursive: true });
  writeFileSync(join(t.workspace, project, 'docs', 'roadmap.md'), '# Roadmap\nShip it.\n');
  writeFileSync(join(t.workspace, project, 'docs', 'other.md'), '# Other\nThe other file says hello.\n');
}

/** A route's turn, started with `body` and `headers`: its stream, and its first approval_required once sent. */
export type StartApprovalTurn = (t: TestApp, body: Record<string, unknown>, headers: Record<string, string>) => { stream: Promise<SseResponse>; asked: Promise<SseEvent> };

/** Another project's key gets 404 and changes nothing; the project's key decides and is named. */
export function describeProjectBoundApprovals(title: string, env: Record<string, string>, start: StartApprovalTurn): void {
  describe(title, () => {
    let llm: ReplayServer;
    let t: TestApp;

    beforeAll(async () => {
      llm = await ReplayServer.start();
      t = await startApp({ ...approvalEnv(llm, env), API_KEYS: APPROVALS_ROOT_KEY });
      seedWorkspace(t, 'alpha');
    }, 120_000);
    afterAll(async () => {
      await t.close();
      await llm.close();
    });

    it("another project's key gets 404 and changes nothing; the project's key decides and is named", async () => {
      const keyFor = async (project: string) => {
        const res = await fetch(`${t.url}/api/admin/keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${APPROVALS_ROOT_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `${project} app`, projects: [project], role: 'user' }),
        });
        return (await res.json()) as { key: string; id: string };
      };
      const a = await keyFor('alpha');
      const b = await keyFor('beta');
      llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }]), respond.turn([{ text: 'Done.' }]));
      const turn = start(t, { projectId: 'alpha' }, { authorization: `Bearer ${a.key}` });
      const asked = await turn.asked;
      const path = `${t.url}/api/chat/runs/${asked.data.requestId}/approvals`;
      const as = (key: string, body?: unknown) =>
        fetch(body ? `${path}/${asked.data.approvalId}` : path, {
          method: body ? 'POST' : 'GET',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body ? JSON.stringify(body) : undefined,
        });
      expect((await as(b.key, { decision: 'approve' })).status).toBe(404);
      expect((await as(b.key)).status).toBe(404);
      expect((await (await as(a.key)).json())[0]).toMatchObject({ status: 'pending' });
      // nothing ran on the other key's refused decision: the model was asked once
      expect(llm.chatRequests).toHaveLength(1);
      const ok = await as(a.key, { decision: 'approve' });
      expect(await ok.json()).toMatchObject({ status: 'approved', by: a.id });
      const res = await turn.stream;
      expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ by: a.id });
      expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    });
  });
}
