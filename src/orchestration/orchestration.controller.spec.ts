import type { MessageEvent } from '@nestjs/common';
import type { ExecuteToolsDto } from './modes/dto/execute-tools.dto';
import type { ToolCallsResult, ToolModeProgress } from './modes/tool-calls-result';
import { OrchestrationController } from './orchestration.controller';
import type { OrchestrationService } from './orchestration.service';
import type { ToolIndexService } from './modes/tool-index/tool-index.service';
import type { ToolRunner } from '../tools/tool-runner.port';
import type { KeyedExecutions } from './modes/keyed-executions';

/**
 * The tool-mode stream (POST execute/stream) ends its generator when the caller leaves. The e2e
 * hang-up cases pass on the client signal alone (it aborts the model request); this one keeps the
 * request's signal quiet, so only the stream's teardown (fromGenerator's `gen.return()`) can run
 * the generator's `finally`.
 */
describe('OrchestrationController execute/stream', () => {
  it('returns the generator (its finally runs) when the subscriber leaves, and emits nothing after', async () => {
    let release!: () => void;
    let finished!: () => void;
    const ended = new Promise<void>((r) => (finished = r));
    // a scripted mode stream that never ends on its own: only gen.return() reaches its finally
    async function* stream(): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined> {
      try {
        for (let i = 0; ; i++) {
          if (i > 0) await new Promise<void>((r) => (release = r));
          yield { stage: 'PrepareTools' } as unknown as ToolModeProgress;
        }
      } finally {
        finished();
      }
    }
    const orchestration = {
      resolveMode: () => 'classic',
      modeOptions: () => ({}),
      executeModeStream: () => stream(),
    } as unknown as OrchestrationService;
    const controller = new OrchestrationController(orchestration, {} as ToolIndexService, {} as ToolRunner, {} as KeyedExecutions);
    const events: MessageEvent[] = [];
    const quiet = new AbortController().signal; // the caller's signal never fires here
    let got!: () => void;
    const first = new Promise<void>((r) => (got = r));
    const subscription = controller.executeStream({ userInput: 'hi' } as ExecuteToolsDto, quiet).subscribe((e) => {
      events.push(e);
      got();
    });
    await first;
    subscription.unsubscribe();
    release(); // the step in progress settles; the generator must not go on past it
    await ended;
    expect(events).toHaveLength(1);
  });
});
