import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, user } from '@openai/agents';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';

/**
 * Issue 47: OpenAI's Agents SDK (`@openai/agents`) with Orion's Responses endpoint as its model
 * provider. Orion runs the tools; the agent gets the answer and records Orion's calls as hosted
 * MCP calls, which it never runs itself.
 */
const ANSWER = 'The guides folder holds install.md and usage.md.';
const chained = () => [respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'The guides folder holds ' }, { text: 'install.md and usage.md.' }])];

describe('@openai/agents against Orion’s Responses endpoint', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let runner: Runner;
  const agent = new Agent({ name: 'Project helper', instructions: 'Answer from the project files.', model: 'orion-unified' });

  beforeAll(async () => {
    // the SDK would otherwise send its traces to OpenAI
    setTracingDisabled(true);
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\n');
    writeFileSync(join(t.workspace, 'default', 'guides', 'usage.md'), '# Usage\n');
    runner = new Runner({ modelProvider: new OpenAIProvider({ baseURL: `${t.url}/v1`, apiKey: 'unused', useResponses: true }) });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  it('run() returns the answer of a chained turn that Orion ran, with its instructions in the system prompt', async () => {
    llm.enqueue(...chained());
    const result = await runner.run(agent, 'What is in the guides folder?');
    expect(result.finalOutput).toBe(ANSWER);
    expect(JSON.stringify(result.newItems.map((i) => i.rawItem))).toContain('list_files');
    expect(llm.chatRequests).toHaveLength(2);
    expect(JSON.stringify(llm.chatRequests[0].body)).toContain('Answer from the project files.');
  });

  it("a follow-up with the first run's history as its input: Orion takes its own output items back as history", async () => {
    llm.enqueue(...chained());
    const first = await runner.run(agent, 'What is in the guides folder?');
    llm.enqueue(respond.turn([{ text: 'Two files.' }]));
    const next = await runner.run(agent, [...first.history, user('How many files is that?')]);
    expect(next.finalOutput).toBe('Two files.');
    const sent = JSON.stringify(llm.chatRequests.at(-1)!.body);
    expect(sent).toContain('What is in the guides folder?');
    expect(sent).toContain(ANSWER);
  });

  it('run() with stream: true streams the answer text and completes', async () => {
    llm.enqueue(...chained());
    const result = await runner.run(agent, 'What is in the guides folder?', { stream: true });
    let streamed = '';
    for await (const event of result.toTextStream()) streamed += event;
    await result.completed;
    expect(streamed).toBe(ANSWER);
    expect(result.finalOutput).toBe(ANSWER);
  });
});
