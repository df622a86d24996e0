import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ChatMessageEntity } from '../../src/chat/entities/chat-message.entity';
import { ConversationEntity } from '../../src/chat/entities/conversation.entity';
import { ConversationRepository } from '../../src/chat/repositories/conversation.repository';
import { emptyUsage, type ProtocolEvent } from '../../src/orchestration/protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../src/orchestration/protocol-strategy';
import { ANSWER_STORE } from '../../src/runs/answer-store.port';
import { RunEventEntity } from '../../src/runs/entities/run-event.entity';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { ApprovalRepository } from '../../src/runs/repositories/approval.repository';
import { ApprovalEntity } from '../../src/runs/entities/approval.entity';
import { RunControlService } from '../../src/runs/run-control.service';
import { RunEventBus, type SentEvent } from '../../src/runs/run-event-bus.service';
import { RunEventWriter } from '../../src/runs/run-event-writer.service';
import { RunEventsService } from '../../src/runs/run-events.service';
import { Drain } from '../../src/common/lifecycle/drain';
import { INSTANCE_ID, RunExecutorService } from '../../src/runs/run-executor.service';
import { RunSweeperService } from '../../src/runs/run-sweeper.service';
import { RunTakeoverRepository } from '../../src/runs/repositories/run-takeover.repository';
import { TraceEventEntity } from '../../src/trace/trace-event.entity';
import { TraceEventRepository } from '../../src/trace/repositories/trace-event.repository';
import { TRACE_SINK } from '../../src/trace/trace-sink.port';
import { TraceWriterService } from '../../src/trace/trace-writer.service';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';
import { WebhookOutboxRepository } from '../../src/webhooks/repositories/webhook-outbox.repository';

/**
 * The run executor when its instance loses a run's lease mid-turn (issue #29): its client is sent
 * the events another instance stored after the last one it got, in order and as stored, then the
 * run's stream ends. The run engine and the database are real (PGlite here, PostgreSQL on
 * test:db); the turn is a scripted protocol that waits, after its third chunk, for the test to
 * take the run over as another instance's sweeper would.
 */
describe('RunExecutorService after a lost lease (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let executor: RunExecutorService;
  let runs: RunRepository;
  let conversationId: string;

  beforeAll(async () => {
    db = await startDatabaseContext(
      [RunEntity, RunEventEntity, ConversationEntity, ChatMessageEntity, TraceEventEntity, ApprovalEntity],
      [
        RunRepository,
        RunTakeoverRepository,
        RunEventRepository,
        RunEventWriter,
        RunEventBus,
        RunControlService,
        RunEventsService,
        Drain,
        RunExecutorService,
        RunSweeperService,
        WebhookOutboxRepository,
        ApprovalRepository,
        ConversationRepository,
        { provide: ANSWER_STORE, useExisting: ConversationRepository },
        TraceEventRepository,
        TraceWriterService,
        { provide: TRACE_SINK, useExisting: TraceWriterService },
      ],
      { RUN_LEASE_MS: '4000' },
    );
    ds = db.ds;
    executor = db.ctx.get(RunExecutorService);
    runs = db.ctx.get(RunRepository);
    [{ id: conversationId }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** what another instance's claim of the expired lease does to the run (RunTakeoverRepository.claimExpired), for this run */
  const claim = (requestId: string) =>
    ds.query(`UPDATE runs SET status = 'failed', stop_reason = 'error', control = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = now() WHERE request_id = $1 AND status = 'running'`, [requestId]);
  /** the rest of its takeover: the answer rebuilt, `error instance_lost` and `done` stored */
  const close = (requestId: string) => db.ctx.get(RunSweeperService).closeFromStoredEvents({ requestId, conversationId, projectId: 'p' }, 'failed');

  /**
   * A run of a scripted protocol: a phase and three chunks, then (once the client has the third
   * and `takeOver` is done) two more chunks and `done`. `takeOver` gets the run's abort signal, which fires when the executor
   * stops the turn. Returns everything the client was handed.
   */
  async function runTakenOver(takeOver: (requestId: string, signal: AbortSignal) => Promise<void>): Promise<{ requestId: string; got: SentEvent[] }> {
    const requestId = randomUUID();
    const got: SentEvent[] = [];
    let thirdChunk!: () => void;
    const clientHasThree = new Promise<void>((r) => (thirdChunk = r));
    await runs.create({ requestId, conversationId, projectId: 'p', userMessageId: null, protocol: 'scripted', options: { mode: 'act' }, leaseOwner: INSTANCE_ID, leaseMs: 4000 });
    const protocol: ProtocolStrategy = {
      name: 'scripted',
      capabilities: { pausePoints: false, resume: false, tools: false },
      async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
        yield { type: 'phase', status: 'start', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 };
        for (const w of ['one ', 'two ', 'three ']) yield { type: 'chunk', content: w };
        await clientHasThree;
        await takeOver(requestId, ctx.signal);
        for (const w of ['four ', 'five ']) yield { type: 'chunk', content: w };
        yield { type: 'done', fullContent: '', stopReason: 'final_answer', usage: emptyUsage() };
      },
    };
    await executor.execute({
      requestId,
      projectId: 'p',
      conversationId,
      turn: { protocol, model: 'scripted', context: (signal, control) => ({ signal, control }) as unknown as ProtocolExecutionContext },
      client: {
        deliver: async (events) => {
          got.push(...events);
          // chunks that wait together are one event (coalescing): the client has the three words once their text is in
          if (got.filter((e) => e.type === 'chunk').map((e) => String(e.data.content)).join('') === 'one two three ') thirdChunk();
        },
      },
      detach: false,
      opening: [{ type: 'start', protocol: 'scripted', userMessageId: null }],
      lastSeq: 0,
      priorContent: '',
    });
    return { requestId, got };
  }

  const stored = async (requestId: string): Promise<Array<{ seq: number; type: string; data: Record<string, unknown> }>> =>
    ds.query(`SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [requestId]);

  /** The client got 1…n with no seq twice, ending with the stored events after its last chunk, as stored. */
  async function expectStoredEnd(requestId: string, got: SentEvent[]) {
    expect(got.map((e) => e.seq)).toEqual(got.map((_, i) => i + 1));
    expect(got.map((e) => e.type).filter((t, i, all) => t !== 'chunk' || all[i - 1] !== 'chunk')).toEqual(['start', 'phase', 'chunk', 'error', 'done']);
    const rows = await stored(requestId);
    expect(rows.map((r) => [r.seq, r.type])).toEqual(got.map((e) => [e.seq, e.type]));
    // the tail is the other instance's rows, read back as the reconnect route reads them
    expect(got.slice(-2).map((e) => JSON.stringify(e.data))).toEqual(rows.slice(-2).map((r) => JSON.stringify(r.data)));
    expect(got.at(-2)!.data).toMatchObject({ code: 'instance_lost' });
    expect(got.at(-1)!.data).toMatchObject({ stopReason: 'error', fullContent: 'one two three ' });
  }

  it('the run was closed elsewhere before the instance wrote again: its client gets the stored error and done, then the run ends', async () => {
    const { requestId, got } = await runTakenOver(async (id) => {
      await claim(id);
      await close(id);
    });
    await expectStoredEnd(requestId, got);
  });

  it('the instance stops the turn before the end is stored: the end is waited for, then sent', async () => {
    let stopped = false;
    const { requestId, got } = await runTakenOver(async (id, signal) => {
      await claim(id);
      // the end is stored only once the executor has stopped the turn (the run's signal fired)
      signal.addEventListener('abort', () => {
        stopped = true;
        void close(id);
      });
    });
    expect(stopped).toBe(true);
    await expectStoredEnd(requestId, got);
  });
});
