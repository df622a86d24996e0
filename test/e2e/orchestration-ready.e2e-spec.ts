import { startApp } from '../support/app';
import { captureLogs } from '../support/log-capture';

/**
 * Issue #29: the start-up line of tool-only orchestration. Its own file: the process has one
 * pino root logger, made by the first app that logs, so the capturing app must be the first.
 */
describe('start-up: Orchestration ready', () => {
  it('logs one line once the tools are registered: modes, the configured defaults, the real index size', async () => {
    const captured = captureLogs();
    const app = await startApp({ LOG_LEVEL: 'log', ORCHESTRATION_DEFAULT_MODE: 'Classic', ORCHESTRATION_MIN_SCORE: '0.4', ORCHESTRATION_TOP_K: '7' }, captured.options);
    try {
      const tools: unknown[] = await (await fetch(`${app.url}/api/tools`)).json();
      expect(tools).toHaveLength(6);
      const ready = captured.logs.filter((l) => l.includes('Orchestration ready'));
      expect(ready).toHaveLength(1);
      expect(JSON.parse(ready[0])).toMatchObject({
        context: 'Orchestration',
        msg: 'Orchestration ready (modes=2 [Classic, NarrowTopK], defaultMode=Classic, maxCalls=1, narrowTopK=7, minScore=0.4, toolIndex=on, indexedTools=6, retrieval=bm25)',
      });
      // the line it replaces counted the index before any tool was registered ("0 tools")
      expect(captured.text()).not.toMatch(/tool index built/);
    } finally {
      await app.close();
    }
  });
});
